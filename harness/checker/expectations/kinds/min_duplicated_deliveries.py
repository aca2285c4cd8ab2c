"""min_duplicated_deliveries: the faults must have made at least this many records delivered more than once."""

from harness.checker.expectations.kind import ExpectationKind, Found, status
from harness.checker.expectations.result import UNKNOWN, ExpectationResult

NAME = "min_duplicated_deliveries"


def _judge(least: int, found: Found) -> list:
    n = found.counts.duplicated_deliveries
    if n is None:
        return [
            ExpectationResult(
                NAME, least, None, UNKNOWN, "records delivered more than once: unknown (no egress evidence)"
            )
        ]
    if n < least and found.unfinished:
        detail = f"{n:,} record(s) delivered more than once so far ({found.unfinished})"
        return [ExpectationResult(NAME, least, n, UNKNOWN, detail)]
    detail = f"{n:,} record(s) delivered more than once, at least {least:,} expected"
    return [ExpectationResult(NAME, least, n, status(n >= least), detail)]


KIND = ExpectationKind(
    NAME,
    "at least this many records delivered more than once (the faults must show re-deliveries)",
    (int,),
    _judge,
    rank=60,
    minimum=0,
    made_by_faults=True,
)
