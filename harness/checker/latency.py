"""End-to-end latency: event time at the source -> arrival at the egress, and how much of it was spent
waiting for restarts (the time from a fault to the pipeline being whole again)."""

from __future__ import annotations

import numpy as np

from contract.roles import EGRESS
from harness.checker.findings import FaultResult, Latency
from harness.checker.intermediate import HopData
from harness.checker.load import Evidence
from harness.checker.rid_sets import first_occurrences, isin
from harness.checker.step import Context, Step


def _downtimes(faults: list[FaultResult]) -> list[tuple[int, int]]:
    """The union of [fault start, recovered] over the faults with a measured recovery, as disjoint intervals (ms)."""
    spans = sorted((f.start_ms, f.start_ms + int(f.recovery_s * 1000)) for f in faults if f.recovers and f.recovery_s)
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def latency(evidence: Evidence, hops: list[HopData], faults: list[FaultResult]) -> Latency:
    """First deliveries of on-time records at the first egress."""
    egress = next((h for h in hops if h.kind == EGRESS), None)
    if egress is None or egress.rows.empty:
        return Latency(0, None, None, None, None, None)
    first = egress.rows[first_occurrences(egress.rows.rid)]
    first = first[~isin(first.rid.to_numpy(), evidence.sent.rid[evidence.sent.late.to_numpy()])]
    sent_ms, arrived_ms = first.event_time_ms.to_numpy(dtype=np.float64), first.time_ms.to_numpy(dtype=np.float64)
    unrecorded = sent_ms < 0  # an output does not carry the event time the generator sent: acks.csv has it
    if unrecorded.any():
        sent_at = evidence.sent.set_index("rid").event_time_ms
        sent_ms[unrecorded] = sent_at.reindex(first.rid.to_numpy()[unrecorded]).to_numpy(dtype=np.float64)
    known = ~np.isnan(sent_ms) & ~np.isnan(arrived_ms)
    sent_ms, arrived_ms = sent_ms[known], arrived_ms[known]
    if not len(sent_ms):
        return Latency(0, None, None, None, None, None)
    values = (arrived_ms - sent_ms) / 1000
    waiting = (
        sum(
            np.clip(np.minimum(arrived_ms, end) - np.maximum(sent_ms, start), 0, None).sum()
            for start, end in _downtimes(faults)
        )
        / 1000
    )
    total = float(np.clip(values, 0, None).sum())
    p50, p90, p99 = np.percentile(values, [50, 90, 99])
    return Latency(
        len(values),
        round(float(p50), 3),
        round(float(p90), 3),
        round(float(p99), 3),
        round(float(values.max()), 3),
        round(waiting / total, 3) if total > 0 else None,
    )


def _latency(context: Context) -> None:
    context.latency = latency(context.evidence, context.hops, context.faults)


def _latency_unknown(context: Context) -> None:
    context.latency = Latency(0, None, None, None, None, None)


STEP = Step("latency", _latency, _latency_unknown, needs=("reconcile", "faults"))
