"""How fast the pipeline moved its records: end to end, the records the source acknowledged per second from the
workload's start until the pipeline had drained them (the timeline's marks); per streamlet, the rows per second
Spark reported for its batches that read any (processedRowsPerSecond: the median and the slowest).
`min_records_per_s` fails a run whose pipeline moved fewer end to end than it asks (a soak's "it keeps up at this
rate"); a run that never drained is unknown, never a pass."""

from __future__ import annotations

import statistics

from contract.query_events import QUERY_PROGRESS
from harness.checker.counts import COUNTS
from harness.checker.expectations.kind import ExpectationKind, Found, status
from harness.checker.expectations.result import UNKNOWN, ExpectationResult
from harness.checker.section import Section
from harness.checker.step import Context, Step
from harness.checker.timeline import TIMELINE

HEADER = ("streamlet", "batches with input", "rows read", "median rows/s", "slowest rows/s")
NAME = "min_records_per_s"


def records_per_s(acked: int | None, marks: dict) -> float | None:
    """Acknowledged records per second from the workload's start until the pipeline had drained them (the
    timeline's marks, in seconds; None: not measured)."""
    start, drained = marks.get("workload_started"), marks.get("drained")
    if acked is None or start is None or drained is None or drained <= start:
        return None
    return acked / (drained - start)


def _row(name: str, events: list[dict] | None) -> tuple:
    if events is None:  # its progress file is missing: nothing of its batches is known
        return (name, None, None, None, None)
    read = [
        e["progress"]
        for e in events
        if e.get("event") == QUERY_PROGRESS and isinstance((e.get("progress") or {}).get("numInputRows"), int)
    ]
    read = [p for p in read if p["numInputRows"] > 0]
    rates = [p["processedRowsPerSecond"] for p in read if isinstance(p.get("processedRowsPerSecond"), (int, float))]
    median = round(statistics.median(rates), 1) if rates else None
    return (name, len(read), sum(p["numInputRows"] for p in read), median, round(min(rates), 1) if rates else None)


def _section(context: Context) -> Section:
    counts = context[COUNTS]
    rate = records_per_s(counts.acked if counts is not None else None, context[TIMELINE].get("marks", {}))
    shown = "unknown (it never drained)" if rate is None else f"{rate:,.1f} records/s"
    lines = (
        f"end to end, from the workload's start until the pipeline had drained: {shown}",
        "per streamlet, the rows per second Spark reported for its batches that read any",
    )
    rows = tuple(_row(name, events) for name, events in context.evidence.progress.items())
    return Section("Throughput", lines, HEADER, rows, data={"end_to_end_per_s": rate})


def _judge(minimum: float, found: Found) -> list[ExpectationResult]:
    section = found.sections.get("throughput")
    rate = section.data["end_to_end_per_s"] if section is not None else None
    if rate is None:
        detail = f"throughput unknown (the pipeline never drained), at least {minimum:g}"
        return [ExpectationResult(NAME, minimum, None, UNKNOWN, detail + " records/s asked")]
    detail = f"{rate:,.1f} records/s end to end, at least {minimum:,g} asked"
    return [ExpectationResult(NAME, minimum, round(rate, 1), status(rate >= minimum), detail)]


MIN_RECORDS_PER_S = ExpectationKind(
    NAME,
    "the pipeline moved at least this many records a second end to end, until drained",
    (int, float),
    _judge,
    rank=96,
    read=lambda value, scope: float(value),
    minimum=0,
)
KIND = Step("throughput", section=_section, needs=(COUNTS, TIMELINE), expectations=(MIN_RECORDS_PER_S,))
