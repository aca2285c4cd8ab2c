"""max_lost: at most this many records lost."""

from harness.checker.expectations.kind import ExpectationKind, Found, lost, status
from harness.checker.expectations.result import UNKNOWN, ExpectationResult


def _judge(limit: int, found: Found) -> list:
    n, why = lost(found)
    if n is None:
        return [ExpectationResult("max_lost", limit, None, UNKNOWN, f"records lost: unknown ({why})")]
    return [
        ExpectationResult("max_lost", limit, n, status(n <= limit), f"{n:,} record(s) lost, at most {limit:,} allowed")
    ]


KIND = ExpectationKind("max_lost", "at most this many records lost", (int,), _judge, rank=40, minimum=0)
