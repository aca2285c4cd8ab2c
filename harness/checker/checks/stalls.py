"""How long each streamlet stalled: the longest it had records waiting in its inputs (its lag above zero at the
runner's offset samples) while none of its batches read a row, from when it last read (or its lag rose) to the last
sample still waiting. A job that hangs after a fault (a broker bounced, a network cut healed) stalls until the run
ends; `max_stall_s` fails a run in which a streamlet stalled longer than it allows. A streamlet never sampled is
unknown, never a pass."""

from __future__ import annotations

import bisect

from contract.query_events import QUERY_PROGRESS
from harness.checker.expectations.kind import ExpectationKind, Found, at_most_each
from harness.checker.expectations.result import ExpectationResult
from harness.checker.section import Section
from harness.checker.step import Context, Step
from harness.checker.timeline import TIMELINE

HEADER = ("streamlet", "longest stall (s)", "from (s)", "to (s)")
NAME = "max_stall_s"


def _reads_s(events: list[dict], t0: int) -> list[float]:
    """When each batch that read a row finished, in seconds from time zero."""
    return sorted(
        (e["ts_ms"] - t0) / 1000
        for e in events
        if e.get("event") == QUERY_PROGRESS and (e.get("progress") or {}).get("numInputRows", 0) > 0
    )


def _stall(lag: dict, reads: list[float]) -> tuple[float | None, float | None, float | None]:
    """(longest, from, to) in seconds; None where the streamlet was never sampled."""
    if not lag["t"]:
        return (None, None, None)
    longest, waiting_since = (0.0, None, None), None
    for t, behind in zip(lag["t"], lag["records"]):
        if behind <= 0:
            waiting_since = None
            continue
        waiting_since = t if waiting_since is None else waiting_since
        read = bisect.bisect_right(reads, t)  # the reads are sorted: the last one at or before t
        since = max(waiting_since, reads[read - 1]) if read else waiting_since
        if t - since > longest[0]:
            longest = (round(t - since, 1), round(since, 1), t)
    return longest


def _section(context: Context) -> Section | None:
    lag, t0 = context[TIMELINE].get("lag", {}), context[TIMELINE].get("start_ms", 0)
    empty = {"t": [], "records": []}
    rows = tuple(
        (name, *_stall(lag.get(name, empty), _reads_s(events or [], t0)))
        for name, events in context.evidence.progress.items()
    )
    if not rows:
        return None
    lines = ("the longest each streamlet had records waiting in its inputs while none of its batches read a row",)
    return Section("Stalls", lines, HEADER, rows, data={"longest_s": {row[0]: row[1] for row in rows}})


def _judge(limit: float, found: Found) -> list[ExpectationResult]:
    section = found.sections.get("stalls")
    longest = section.data["longest_s"] if section is not None else {}
    return [at_most_each(NAME, limit, longest, "longest stall", "s")]


MAX_STALL_S = ExpectationKind(
    NAME,
    "no streamlet had records waiting and read none for longer than this many seconds",
    (int, float),
    _judge,
    rank=96,
    read=lambda value, scope: float(value),
    minimum=0,
)
KIND = Step("stalls", section=_section, needs=(TIMELINE,), expectations=(MAX_STALL_S,))
