"""Each fault's results: how long the pipeline took to recover from it (harness/checker/faults.py), when its first
output came after it, and the extra copies its replays made, per hop."""

from __future__ import annotations

from harness.checker.copies import ACCOUNTING
from harness.checker.faults import disturbed, first_output_s, recovery_s, restarted_again_ms
from harness.checker.findings import FaultResult
from harness.checker.hops import TALLIES
from harness.checker.intermediate import FaultSpan
from harness.checker.step import Context, Key, Step

FAULTS: Key[list[FaultResult]] = Key("faults", list, reported=True)


def _results(context: Context) -> dict:
    """Per fault: its recovery times (or why they are unknown) and the extra copies its replays made, per hop."""
    spans, accounting, progress = context.spans, context[ACCOUNTING], context.evidence.progress
    redelivered, at_hops = accounting.per_fault(len(spans)), accounting.per_fault_and_hop(len(spans))
    # the first arrivals after each fault (None where the arrivals could not be tallied)
    first_after = context[TALLIES].arrivals.first_after_ms
    astray = {m.number: f"{m.how}: {m.why}" for m in context.misses}
    results = []
    for i, span in enumerate(spans):
        again = restarted_again_ms(spans, i)
        recovered = recovery_s(span, progress, again)
        results.append(
            FaultResult(
                span.kind,
                span.target,
                span.start_ms,
                span.end_ms,
                span.params,
                recovered,
                int(redelivered[i]),
                _note(span, recovered, progress, again),
                span.recovers,
                span.restarted if span.restarts else None,
                at_hops[i],
                first_output_s(span, first_after[i]),
                span.number,
                astray.get(span.number, ""),
            )
        )
    return {FAULTS: results}


def _note(span: FaultSpan, recovered: float | None, progress: dict[str, list[dict] | None], again: int | None) -> str:
    if span.restarts and span.restarted is False:
        return "did not restart"
    if span.end_ms is None:
        return "did not end before the run did"
    if recovered is None and again is not None and recovery_s(span, progress) is not None:
        return "recovery unknown: killed again before its first batch"
    if recovered is None and span.recovers:
        watched = [span.target] if span.restarts else disturbed(span, list(progress))
        missing = [s for s in watched if progress.get(s) is None]
        if missing:
            return f"recovery unknown: progress of {', '.join(missing)} missing"
        return "no batch and no idle report after the restart" if span.restarts else "no batch after it ended"
    return ""


STEP = Step("faults", _results, writes=(FAULTS,), needs=(ACCOUNTING, TALLIES))
