"""verdict: exactly this end-to-end verdict (a caveat reproduced: the weaker guarantee is what must show)."""

from harness.checker.expectations.kind import ExpectationKind, Found, guarantee, status
from harness.checker.expectations.result import UNKNOWN, ExpectationResult


def _judge(expected: str, found: Found) -> list:
    actual = None if found.unfinished or found.verdict == "unknown" else found.verdict
    why = f" ({found.unfinished or 'no egress evidence'})" if actual is None else ""
    return [
        ExpectationResult(
            "verdict",
            expected,
            actual,
            UNKNOWN if actual is None else status(actual == expected),
            f"end to end: {actual or 'unknown'}{why}, expected exactly {expected}",
        )
    ]


KIND = ExpectationKind(
    "verdict",
    "exactly this end-to-end verdict (a caveat that must show)",
    (str,),
    _judge,
    rank=20,
    read=lambda value, scope: guarantee(value),
)
