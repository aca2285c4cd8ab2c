"""Errors the user can act on: the CLI prints them as one line and exits 2."""


def one_line(text: str) -> str:
    """Text made safe for a one-line message: control characters (a field name with a newline in it) escaped."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


class HarnessError(Exception):
    """Bad input or an unusable environment (missing java, missing jars, bad scenario...).

    The message is complete on its own, in one line: it names what is wrong and where.
    """

    exit_code = 2

    def __init__(self, message: str = ""):
        super().__init__(one_line(str(message)))


class WaitTimeout(HarnessError):
    """A condition polled with a deadline did not become true in time."""

    exit_code = 1


class EvidenceIncomplete(HarnessError):
    """Saving a run's evidence failed in part (a topic's recording not caught up, a store not copied): the run
    is judged as one that did not finish."""

    exit_code = 1


class BeyondDense(HarnessError):
    """Evidence the dense engine cannot judge in its arrays: an acknowledgement log whose seqs are too sparse for its
    blocks (not numbered from 0 per key, as the generator numbers them), a window's count beyond 32 bits, a source
    partition whose offsets do not rise in the log's order where a cause needs them to: the check's default engine
    falls back to numpy."""
