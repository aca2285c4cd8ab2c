"""Judging a scenario's expectations against what the checker found: one three-valued result per expectation.

Each expectation is pass, fail or unknown. Unknown when what it needs could not
be measured: no egress evidence (lost, duplicates, the verdict), a hop without
evidence, no history (query failures), no fault whose recovery was measured,
or a run that did not finish (what is missing so far is not yet lost).
"""

from __future__ import annotations

from dataclasses import replace

from harness.checker.declared import FaultMiss
from harness.checker.findings import FAIL, PASS, UNKNOWN, ExpectationResult, FaultResult, Hop, ResourceUse
from harness.checker.reconcile import Counts
from harness.checker.step import Context, Step
from harness.evidence.description import Expectations
from harness.semantics import satisfies

DATA_LOSS_MARKERS = ("data may have been lost", "failondataloss", "offsetoutofrange", "some data may have been lost")


def _hop_named(hops: list[Hop], blueprint_topic: str) -> Hop | None:
    """Hops carry real topic names; on an external cluster those are prefixed with the harness namespace."""
    return next((h for h in hops if h.name == blueprint_topic or h.name.endswith("." + blueprint_topic)), None)


def _status(ok: bool) -> str:
    return PASS if ok else FAIL


def _guarantee(name: str, expected: str, actual: str | None, what: str, why_unknown: str) -> ExpectationResult:
    if actual is None or actual == "unknown":
        return ExpectationResult(
            name, expected, actual, UNKNOWN, f"{what}: unknown ({why_unknown}), expected {expected} or stronger"
        )
    return ExpectationResult(
        name,
        expected,
        actual,
        _status(satisfies(actual, expected)),
        f"{what}: {actual}, expected {expected} or stronger",
    )


def judge(
    expected: Expectations,
    verdict: str,
    counts: Counts,
    hops: list[Hop],
    lost_causes: dict | None,
    faults: list[FaultResult],
    query_failures: list[dict] | None,
    unfinished: str = "",
    resources: ResourceUse | None = None,
) -> list[ExpectationResult]:
    """`lost_causes` None: losses could not be counted; `query_failures` None: no history to read them from;
    `unfinished`: why the run is not finished ("" when it is), which makes every loss-based result unknown."""
    results = []
    lost = None if unfinished else counts.lost
    why_lost = unfinished or "no egress evidence"
    if expected.end_to_end is not None:
        results.append(
            _guarantee("end_to_end", expected.end_to_end, None if unfinished else verdict, "end to end", why_lost)
        )
    if expected.verdict is not None:
        results.append(
            _exact_verdict(expected.verdict, None if unfinished or verdict == "unknown" else verdict, why_lost)
        )
    for topic, guarantee in expected.per_hop.items():
        hop = _hop_named(hops, topic)
        actual = hop.verdict if hop and not unfinished else None
        why = unfinished or "no evidence for this hop"
        results.append(_guarantee(f"per_hop.{topic}", guarantee, actual, f"hop {topic}", why))
    if expected.max_lost is not None:
        results.append(_max_lost(expected.max_lost, lost, why_lost))
    if expected.lost_causes is not None:
        results.append(_lost_causes(expected.lost_causes, None if lost is None else lost_causes, why_lost))
    if expected.min_duplicated_deliveries is not None:
        results.append(_min_duplicated(expected.min_duplicated_deliveries, counts.duplicated_deliveries, unfinished))
    if expected.query_failure is not None:
        results.append(_query_failure(expected.query_failure, query_failures))
    if expected.max_recovery_s is not None:
        results.append(_recovery(expected.max_recovery_s, faults))
    if expected.max_memory_growth is not None:
        results.append(_memory_growth(expected.max_memory_growth, resources))
    if expected.headers_kept is not None:
        results.append(_headers(expected.headers_kept, hops))
    return results


def _exact_verdict(expected: str, actual: str | None, why_unknown: str) -> ExpectationResult:
    return ExpectationResult(
        "verdict",
        expected,
        actual,
        UNKNOWN if actual is None else _status(actual == expected),
        f"end to end: {actual or 'unknown'}"
        + (f" ({why_unknown})" if actual is None else "")
        + f", expected exactly {expected}",
    )


def _max_lost(limit: int, lost: int | None, why_unknown: str) -> ExpectationResult:
    if lost is None:
        return ExpectationResult("max_lost", limit, None, UNKNOWN, f"records lost: unknown ({why_unknown})")
    return ExpectationResult(
        "max_lost", limit, lost, _status(lost <= limit), f"{lost:,} record(s) lost, at most {limit:,} allowed"
    )


def _min_duplicated(least: int, n: int | None, unfinished: str) -> ExpectationResult:
    name = "min_duplicated_deliveries"
    if n is None:
        return ExpectationResult(
            name, least, None, UNKNOWN, "records delivered more than once: unknown (no egress evidence)"
        )
    if n < least and unfinished:
        return ExpectationResult(
            name, least, n, UNKNOWN, f"{n:,} record(s) delivered more than once so far ({unfinished})"
        )
    return ExpectationResult(
        name, least, n, _status(n >= least), f"{n:,} record(s) delivered more than once, at least {least:,} expected"
    )


def _headers(kept: bool, hops: list[Hop]) -> ExpectationResult:
    """Every copy at every topic carries the source's header (kept), or some copy lacks it (not kept: the caveat
    shows); unknown where no topic was looked at."""
    looked = {h.name: h.headers_lost for h in hops if h.headers_lost is not None}
    if not looked:
        return ExpectationResult(
            "headers_kept", kept, None, UNKNOWN, "headers: unknown (no intermediate topic recorded with them)"
        )
    lost = {name: n for name, n in looked.items() if n}
    detail = (
        "every copy at " + ", ".join(looked) + " has the source's header"
        if not lost
        else "copies without the source's header: " + ", ".join(f"{n:,} at {name}" for name, n in lost.items())
    )
    return ExpectationResult("headers_kept", kept, not lost, _status((not lost) == kept), detail)


def _memory_growth(limit: float, resources: ResourceUse | None) -> ExpectationResult:
    """Fail if any process grew more than `limit` once warm; unknown if no growth could be measured."""
    if resources is None:
        return ExpectationResult(
            "max_memory_growth", limit, None, UNKNOWN, "memory growth: unknown (no resource samples in the history)"
        )
    worst = resources.max_growth
    if worst is None:
        return ExpectationResult(
            "max_memory_growth",
            limit,
            None,
            UNKNOWN,
            f"memory growth: unknown (no process ran 10 minutes past its {resources.warmup_s / 60:g}-minute warm-up)",
        )
    grown = [
        f"{p.name} {p.growth:+.1%} ({p.warm_mb:g} -> {p.end_mb:g} MB, medians)"
        for p in resources.processes
        if p.growth is not None and p.growth > limit
    ]
    if grown:
        return ExpectationResult("max_memory_growth", limit, worst, FAIL, "grew once warm: " + "; ".join(grown))
    return ExpectationResult(
        "max_memory_growth", limit, worst, PASS, f"largest growth once warm {worst:+.1%}, at most {limit:+.0%} allowed"
    )


def _lost_causes(allowed: tuple[str, ...], causes: dict | None, why: str) -> ExpectationResult:
    if causes is None:
        return ExpectationResult("lost_causes", list(allowed), None, UNKNOWN, f"causes of loss: unknown ({why})")
    other = {cause: n for cause, n in causes.items() if n and cause not in allowed}
    detail = (
        f"every lost record explained by {' or '.join(allowed)}"
        if not other
        else "lost records not explained so: " + ", ".join(f"{n:,} {cause}" for cause, n in other.items())
    )
    return ExpectationResult(
        "lost_causes", list(allowed), {c: n for c, n in causes.items() if n}, _status(not other), detail
    )


def _query_failure(expected: str, failures: list[dict] | None) -> ExpectationResult:
    if failures is None:
        return ExpectationResult(
            "query_failure", expected, None, UNKNOWN, "query failures: unknown (history.jsonl missing)"
        )
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
    return ExpectationResult("query_failure", expected, actual, _status(ok), detail)


def _recovery(limit: float, faults: list[FaultResult]) -> ExpectationResult:
    """Fail if any fault took longer or its target never came back; else unknown if any fault's recovery could
    not be measured (or there was none to measure); else pass."""
    applicable = [f for f in faults if f.recovers]
    measured = [f for f in applicable if f.recovery_s is not None]
    worst = max((f.recovery_s for f in measured), default=None)
    problems = [f"{f.kind} {f.target} took {f.recovery_s:g}s" for f in measured if f.recovery_s > limit]
    problems += [f"{f.kind} {f.target} did not restart" for f in applicable if f.restarted is False]
    if problems:
        return ExpectationResult("max_recovery_s", limit, worst, FAIL, "; ".join(problems))
    unmeasured = [f for f in applicable if f.recovery_s is None]
    if not measured or unmeasured:
        why = (
            "no fault with a recovery to measure"
            if not applicable
            else "; ".join(f"{f.kind} {f.target}: {f.note or 'recovery not measured'}" for f in unmeasured)
            or "none measured"
        )
        return ExpectationResult("max_recovery_s", limit, worst, UNKNOWN, f"recovery unknown: {why}")
    return ExpectationResult(
        "max_recovery_s", limit, worst, PASS, f"slowest recovery {worst:g}s, at most {limit:g}s allowed"
    )


# Expectations whose result does not depend on the faults having struck as declared (a process's memory growth).
FAULT_FREE = ("max_memory_growth",)


def undeclared(results: list[ExpectationResult], misses: list[FaultMiss]) -> list[ExpectationResult]:
    """With faults that did not strike as declared, what depends on them is not shown: a pass is unknown, and so
    is too few duplicates (the fault that would have made them did not play); any other failure stands."""
    if not misses:
        return results
    why = "; ".join(m.text for m in misses)
    return [
        replace(r, status=UNKNOWN, detail=f"{r.detail}; unknown, as {why}")
        if r.name not in FAULT_FREE and (r.status == PASS or r.name == "min_duplicated_deliveries")
        else r
        for r in results
    ]


def _expectations(context: Context) -> None:
    evidence = context.evidence
    context.expectations = undeclared(
        judge(
            evidence.pipeline.expectations,
            context.verdict,
            context.counts,
            context.hop_findings,
            context.lost_by_cause,
            context.faults,
            context.query_failures if evidence.has_history else None,
            context.unfinished,
            context.resources,
        ),
        context.misses,
    )


def _expectations_unknown(context: Context) -> None:
    failed = ", ".join(sorted(context.failed))
    context.expectations = [
        ExpectationResult("expectations", None, None, UNKNOWN, f"not judged: check step(s) {failed} failed")
    ]


STEP = Step("expectations", _expectations, _expectations_unknown, needs=("counts", "faults"))
