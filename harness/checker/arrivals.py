"""The egresses' arrivals tallied (intermediate.Arrivals), with numpy from the loaded hops: the latency of each
record's first arrival at the first egress and the time it spent waiting for restarts, and the first arrival after
each fault. An engine tallies the same where the records are (harness/checker/summary/sql.py): the latency and the
faults' first output are computed from the tally either way, so they are the same whichever engine counted.
"""

from __future__ import annotations

import numpy as np

from contract.roles import EGRESS
from harness.checker.faults import recovery_s
from harness.checker.intermediate import Arrivals, FaultSpan, HopData
from harness.checker.load import Evidence
from harness.checker.rid_sets import first_occurrences, isin


def downtimes(spans: list[FaultSpan], progress: dict[str, list[dict] | None]) -> list[tuple[int, int]]:
    """The union of [fault start, recovered] over the faults with a measured recovery, as disjoint intervals (ms)."""
    recovered = [(span, recovery_s(span, progress)) for span in spans]
    intervals = sorted((s.start_ms, s.start_ms + int(r * 1000)) for s, r in recovered if s.recovers and r)
    merged: list[tuple[int, int]] = []
    for start, end in intervals:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def boundaries(spans: list[FaultSpan]) -> list[int | None]:
    """Per fault, when its target restarted (a restarting fault) or it ended (others): its output counts from then
    (None: no recovery applies, or it did not restart or end)."""
    return [(s.restart_ms if s.restarts else s.end_ms) if s.recovers else None for s in spans]


def _first_after(times: list[np.ndarray], after: int | None) -> int | None:
    if after is None:
        return None
    later = [t[t > after] for t in times]
    firsts = [int(t.min()) for t in later if len(t)]
    return min(firsts) if firsts else None


def _first_arrivals(evidence: Evidence, egress: HopData) -> tuple[np.ndarray, np.ndarray]:
    """Event time and first arrival (ms) of each on-time record at `egress` whose event time is known: the one the
    egress recorded, else the acknowledgement log's."""
    sent, rows = evidence.sent, egress.rows
    rid = rows.rid.to_numpy()
    first = np.flatnonzero(first_occurrences(rid))  # the three columns taken at these rows only, not the frame
    first = first[~isin(rid[first], sent.rid[sent.late.to_numpy()])]
    rid = rid[first]
    sent_ms = rows.event_time_ms.to_numpy()[first].astype(np.float64)
    arrived_ms = rows.time_ms.to_numpy()[first].astype(np.float64)
    del first
    unrecorded = np.flatnonzero(sent_ms < 0)  # an output does not carry the event time the generator sent
    if len(unrecorded):  # a phantom's is not known: NaN
        sent_ms[unrecorded] = evidence.sent_at(rid[unrecorded], ["event_time_ms"]).event_time_ms.to_numpy(np.float64)
    known = ~np.isnan(sent_ms) & ~np.isnan(arrived_ms)
    return sent_ms[known].astype(np.int64), arrived_ms[known].astype(np.int64)


def tally(evidence: Evidence, hops: list[HopData], spans: list[FaultSpan]) -> Arrivals:
    """The arrivals tallied from the hops' rows in memory."""
    egresses = [h for h in hops if h.kind == EGRESS]
    times = [h.rows.time_ms.to_numpy() for h in egresses if "time_ms" in h.rows.columns]
    first_after = [_first_after(times, after) for after in boundaries(spans)]
    if not egresses or egresses[0].rows.empty:
        return Arrivals(np.array([], np.int64), np.array([], np.int64), 0, first_after)
    sent_ms, arrived_ms = _first_arrivals(evidence, egresses[0])
    waiting = sum(
        int(np.clip(np.minimum(arrived_ms, end) - np.maximum(sent_ms, start), 0, None).sum())
        for start, end in downtimes(spans, evidence.progress)
    )
    latency_ms, records = np.unique(arrived_ms - sent_ms, return_counts=True)
    return Arrivals(latency_ms, records.astype(np.int64), waiting, first_after)
