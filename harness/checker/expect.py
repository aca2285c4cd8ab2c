"""Judging a scenario's expectations against what the checker found: one result per expectation."""

from __future__ import annotations

from harness.checker.findings import ExpectationResult, FaultResult, Hop
from harness.checker.reconcile import Counts
from harness.scenario.expectations import Expectations, satisfies

DATA_LOSS_MARKERS = ("data may have been lost", "failondataloss", "offsetoutofrange", "some data may have been lost")


def _hop_named(hops: list[Hop], blueprint_topic: str) -> Hop | None:
    """Hops carry real topic names; on an external cluster those are prefixed with the harness namespace."""
    return next((h for h in hops if h.name == blueprint_topic or h.name.endswith("." + blueprint_topic)), None)


def judge(expected: Expectations, verdict: str, counts: Counts, hops: list[Hop], lost_causes: dict,
          faults: list[FaultResult], query_failures: list[dict]) -> list[ExpectationResult]:
    results = []
    if expected.end_to_end is not None:
        results.append(ExpectationResult("end_to_end", expected.end_to_end, verdict, satisfies(verdict, expected.end_to_end),
                                         f"end to end: {verdict}, expected {expected.end_to_end} or stronger"))
    for topic, guarantee in expected.per_hop.items():
        hop = _hop_named(hops, topic)
        actual = hop.verdict if hop else None
        results.append(ExpectationResult(f"per_hop.{topic}", guarantee, actual, bool(hop) and satisfies(actual, guarantee),
                                         f"hop {topic}: {actual or 'not judged (no evidence)'}, expected {guarantee} or stronger"))
    if expected.max_lost is not None:
        results.append(ExpectationResult("max_lost", expected.max_lost, counts.lost, counts.lost <= expected.max_lost,
                                         f"{counts.lost} record(s) lost, at most {expected.max_lost} allowed"))
    if expected.lost_causes is not None:
        other = {cause: n for cause, n in lost_causes.items() if n and cause not in expected.lost_causes}
        detail = ", ".join(f"{n} {cause}" for cause, n in other.items())
        results.append(ExpectationResult(
            "lost_causes", list(expected.lost_causes), {c: n for c, n in lost_causes.items() if n}, not other,
            f"every lost record explained by {' or '.join(expected.lost_causes)}" if not other else f"lost records not explained so: {detail}"))
    if expected.min_duplicated_deliveries is not None:
        n = counts.duplicated_deliveries
        results.append(ExpectationResult("min_duplicated_deliveries", expected.min_duplicated_deliveries, n,
                                         n >= expected.min_duplicated_deliveries,
                                         f"{n} record(s) delivered more than once, at least {expected.min_duplicated_deliveries} expected"))
    if expected.query_failure is not None:
        data_loss = [f for f in query_failures if any(m in f.get("error", "").lower() for m in DATA_LOSS_MARKERS)]
        if expected.query_failure == "data-loss":
            passed = bool(data_loss)
            detail = (f"{data_loss[0]['streamlet']}'s query stopped with Spark's data-loss error" if passed
                      else "no query stopped with Spark's data-loss error")
        else:
            passed = not query_failures
            detail = "no query failed" if passed else f"{len(query_failures)} query failure(s): " + \
                ", ".join(f["streamlet"] for f in query_failures)
        results.append(ExpectationResult("query_failure", expected.query_failure,
                                         "data-loss" if data_loss else ("other" if query_failures else "none"), passed, detail))
    if expected.max_recovery_s is not None:
        slow = [f for f in faults if f.recovery_s is not None and f.recovery_s > expected.max_recovery_s]
        stuck = [f for f in faults if f.note.startswith("did not restart")]
        worst = max((f.recovery_s for f in faults if f.recovery_s is not None), default=None)
        problems = [f"{f.kind} {f.target} took {f.recovery_s}s" for f in slow] + [f"{f.kind} {f.target} did not restart" for f in stuck]
        results.append(ExpectationResult("max_recovery_s", expected.max_recovery_s, worst, not problems,
                                         "; ".join(problems) or f"slowest recovery {worst}s, at most {expected.max_recovery_s}s allowed"))
    return results
