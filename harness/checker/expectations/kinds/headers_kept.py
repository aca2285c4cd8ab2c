"""headers_kept: every copy at every topic carries the source's header (true), or some copy lacks it (false)."""

from harness.checker.expectations.kind import ExpectationKind, Found, Invalid, Scope, status
from harness.checker.expectations.result import UNKNOWN, ExpectationResult


def _read(value: bool, scope: Scope) -> bool:
    if scope.headers is False:
        raise Invalid("", "the source records carry no header to keep: set workload.headers: true")
    return value


def _judge(kept: bool, found: Found) -> list:
    """Unknown where no topic was looked at."""
    looked = {h.name: h.headers_lost for h in found.hops if h.headers_lost is not None}
    if not looked:
        detail = "headers: unknown (no intermediate topic recorded with them)"
        return [ExpectationResult("headers_kept", kept, None, UNKNOWN, detail)]
    lost = {name: n for name, n in looked.items() if n}
    detail = (
        "every copy at " + ", ".join(looked) + " has the source's header"
        if not lost
        else "copies without the source's header: " + ", ".join(f"{n:,} at {name}" for name, n in lost.items())
    )
    return [ExpectationResult("headers_kept", kept, not lost, status((not lost) == kept), detail)]


KIND = ExpectationKind(
    "headers_kept",
    "every copy at every topic carries the source's header (workload.headers)",
    (bool,),
    _judge,
    rank=100,
    read=_read,
)
