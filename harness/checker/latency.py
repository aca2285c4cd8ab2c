"""End-to-end latency: event time at the source -> first arrival at the egress, and how much of it was spent
waiting for restarts (the time from a fault to the pipeline being whole again), from the arrivals' tally
(harness/checker/arrivals.py)."""

from __future__ import annotations

import numpy as np

from harness.checker.findings import Latency
from harness.checker.hops import TALLIES
from harness.checker.intermediate import Arrivals
from harness.checker.step import Context, Key, Step

NONE = Latency(0, None, None, None, None, None)
LATENCY: Key[Latency] = Key("latency", lambda: NONE, reported=True)


def percentiles_ms(latency_ms: np.ndarray, records: np.ndarray, qs: tuple[float, ...]) -> list[float]:
    """The `qs` percentiles of the values `latency_ms` (ascending) each taken `records` times, interpolated
    linearly between the two closest ranks (numpy's default method)."""
    ends = np.cumsum(records)  # the rank after the last of each value
    found = []
    for q in qs:
        rank = (int(ends[-1]) - 1) * q / 100
        below = int(np.floor(rank))
        low, high = latency_ms[np.searchsorted(ends, [below, below + 1], side="right").clip(max=len(ends) - 1)]
        found.append(float(low) + (rank - below) * float(high - low))
    return found


def latency(arrivals: Arrivals) -> Latency:
    """First deliveries of on-time records at the first egress."""
    if not len(arrivals.records):
        return NONE
    p50, p90, p99 = (ms / 1000 for ms in percentiles_ms(arrivals.latency_ms, arrivals.records, (50, 90, 99)))
    total_ms = int((np.clip(arrivals.latency_ms, 0, None) * arrivals.records).sum())
    return Latency(
        int(arrivals.records.sum()),
        round(p50, 3),
        round(p90, 3),
        round(p99, 3),
        round(int(arrivals.latency_ms[-1]) / 1000, 3),
        round(arrivals.waiting_ms / total_ms, 3) if total_ms > 0 else None,
    )


def _latency(context: Context) -> dict:
    return {LATENCY: latency(context[TALLIES].arrivals)}


STEP = Step("latency", _latency, writes=(LATENCY,), needs=(TALLIES,))
