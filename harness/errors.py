"""Errors the user can act on: the CLI prints them as one line and exits 2."""


class HarnessError(Exception):
    """Bad input or an unusable environment (missing java, missing jars, bad scenario...).

    The message is complete on its own: it names what is wrong and where.
    """

    exit_code = 2


class WaitTimeout(HarnessError):
    """A condition polled with a deadline did not become true in time."""

    exit_code = 1
