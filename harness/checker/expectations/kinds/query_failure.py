"""query_failure: a query must stop with Spark's data-loss error (data-loss), or none may fail (none)."""

from harness.checker.expectations.kind import ExpectationKind, Found, Invalid, Scope, status
from harness.checker.expectations.result import UNKNOWN, ExpectationResult

CHOICES = ("data-loss", "none")
DATA_LOSS_MARKERS = ("data may have been lost", "failondataloss", "offsetoutofrange", "some data may have been lost")


def _read(value: str, scope: Scope) -> str:
    if value not in CHOICES:
        raise Invalid("", f"expected one of {', '.join(CHOICES)}, got {value!r}")
    return value


def _judge(expected: str, found: Found) -> list:
    failures = found.query_failures
    if failures is None:
        return [
            ExpectationResult(
                "query_failure", expected, None, UNKNOWN, "query failures: unknown (history.jsonl missing)"
            )
        ]
    data_loss = [f for f in failures if any(m in f.get("error", "").lower() for m in DATA_LOSS_MARKERS)]
    actual = "data-loss" if data_loss else ("other" if failures else "none")
    if expected == "data-loss":
        ok = bool(data_loss)
        detail = (
            f"{data_loss[0]['streamlet']}'s query stopped with Spark's data-loss error"
            if ok
            else "no query stopped with Spark's data-loss error"
        )
    else:
        ok = not failures
        detail = (
            "no query failed"
            if ok
            else f"{len(failures)} query failure(s): " + ", ".join(f["streamlet"] for f in failures)
        )
    return [ExpectationResult("query_failure", expected, actual, status(ok), detail)]


KIND = ExpectationKind(
    "query_failure",
    "a query must stop with Spark's data-loss error (data-loss), or none may fail (none)",
    (str,),
    _judge,
    rank=70,
    read=_read,
)
