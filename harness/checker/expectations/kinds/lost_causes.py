"""lost_causes: every lost record explained by one of these causes."""

from harness.checker.expectations.kind import ExpectationKind, Found, Invalid, Scope, lost, status
from harness.checker.expectations.result import UNKNOWN, ExpectationResult
from harness.semantics import EXPECTABLE_CAUSES


def _read(value: list, scope: Scope) -> list[str]:
    for index, cause in enumerate(value):
        if cause not in EXPECTABLE_CAUSES:
            raise Invalid(f"[{index}]", f"expected one of {', '.join(EXPECTABLE_CAUSES)}, got {cause!r}")
    return list(value)


def _judge(allowed: list[str], found: Found) -> list:
    n, why = lost(found)
    causes = None if n is None else found.lost_by_cause
    if causes is None:
        return [ExpectationResult("lost_causes", list(allowed), None, UNKNOWN, f"causes of loss: unknown ({why})")]
    other = {cause: n for cause, n in causes.items() if n and cause not in allowed}
    detail = (
        f"every lost record explained by {' or '.join(allowed)}"
        if not other
        else "lost records not explained so: " + ", ".join(f"{n:,} {cause}" for cause, n in other.items())
    )
    kept = {c: n for c, n in causes.items() if n}
    return [ExpectationResult("lost_causes", list(allowed), kept, status(not other), detail)]


KIND = ExpectationKind(
    "lost_causes", "every lost record explained by one of these causes", (list,), _judge, rank=50, read=_read
)
