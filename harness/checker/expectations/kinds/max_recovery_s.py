"""max_recovery_s: every fault recovered within this many seconds."""

from harness.checker.expectations.kind import ExpectationKind, Found
from harness.checker.expectations.result import FAIL, PASS, UNKNOWN, ExpectationResult


def _judge(limit: float, found: Found) -> list:
    """Fail if any fault took longer or its target never came back; else unknown if any fault's recovery could
    not be measured (or there was none to measure); else pass."""
    applicable = [f for f in found.faults if f.recovers]
    measured = [f for f in applicable if f.recovery_s is not None]
    worst = max((f.recovery_s for f in measured), default=None)
    problems = [f"{f.kind} {f.target} took {f.recovery_s:g}s" for f in measured if f.recovery_s > limit]
    problems += [f"{f.kind} {f.target} did not restart" for f in applicable if f.restarted is False]
    if problems:
        return [ExpectationResult("max_recovery_s", limit, worst, FAIL, "; ".join(problems))]
    unmeasured = [f for f in applicable if f.recovery_s is None]
    if not measured or unmeasured:
        why = (
            "no fault with a recovery to measure"
            if not applicable
            else "; ".join(f"{f.kind} {f.target}: {f.note or 'recovery not measured'}" for f in unmeasured)
            or "none measured"
        )
        return [ExpectationResult("max_recovery_s", limit, worst, UNKNOWN, f"recovery unknown: {why}")]
    detail = f"slowest recovery {worst:g}s, at most {limit:g}s allowed"
    return [ExpectationResult("max_recovery_s", limit, worst, PASS, detail)]


KIND = ExpectationKind(
    "max_recovery_s",
    "every fault recovered within this many seconds",
    (int, float),
    _judge,
    rank=80,
    read=lambda value, scope: float(value),
    minimum=0,
)
