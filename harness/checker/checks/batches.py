"""The micro-batches each streamlet ran: how many, how long the median and the longest took (Spark's
triggerExecution: planning, reading, writing and committing one batch), which batch was the longest, and the most
input rows one batch read; a driver of several queries, a row for each (`orders (lake)`). Read from the query events
alone (progress/<streamlet>.jsonl; an application's, from its checkpoint, which records no duration: unknown). A
trigger that found no new data ran no batch and is not counted.

The worked example of a check of one module (docs/architecture.md): a Step named KIND with a section.
"""

from __future__ import annotations

import statistics

from contract.query_events import QUERY_PROGRESS
from harness.checker.section import Section
from harness.checker.step import Context, Step

HEADER = ("streamlet", "batches", "median ms", "longest ms", "longest batch", "most rows in a batch")


def _batches(events: list[dict]) -> list[dict]:
    """The progress of each batch run: a streamlet's events whose durations include writing (addBatch), and an
    application's, which have no durations."""
    found = []
    for event in events:
        progress = event.get("progress") if event.get("event") == QUERY_PROGRESS else None
        if not isinstance(progress, dict):
            continue
        durations = progress.get("durationMs")
        if durations is None or (isinstance(durations, dict) and "addBatch" in durations):
            found.append(progress)
    return found


def _row(name: str, events: list[dict] | None) -> tuple:
    if events is None:  # its progress file is missing: nothing of its batches is known
        return (name, None, None, None, None, None)
    batches = _batches(events)
    timed = [
        (b["durationMs"]["triggerExecution"], b.get("batchId"))
        for b in batches
        if isinstance((b.get("durationMs") or {}).get("triggerExecution"), int)
    ]
    rows = [b["numInputRows"] for b in batches if isinstance(b.get("numInputRows"), int)]
    longest = max(timed, key=lambda t: t[0], default=(None, None))
    return (
        name,
        len(batches),
        round(statistics.median(t[0] for t in timed)) if timed else None,
        longest[0],
        longest[1],
        max(rows, default=None),
    )


def _queries(name: str, events: list[dict] | None) -> list[tuple[str, list[dict] | None]]:
    """The streamlet's events, or each of its queries' where it ran several (named by its checkpoint's folder)."""
    named = sorted({e["query"] for e in events or () if isinstance(e.get("query"), str)})
    if len(named) < 2:
        return [(name, events)]
    return [(f"{name} ({query})", [e for e in events if e.get("query") == query]) for query in named]


def _section(context: Context) -> Section:
    progress = context.evidence.progress.items()
    rows = tuple(_row(label, mine) for name, events in progress for label, mine in _queries(name, events))
    timed = [row for row in rows if row[3] is not None]
    lines = ["each streamlet's micro-batches, from its query events (a trigger that found no new data is not one)"]
    if timed:
        name, _, _, longest, batch, _ = max(timed, key=lambda row: row[3])
        lines.append(f"the longest: {name}'s batch {batch}, {longest} ms")
    return Section("Micro-batches", tuple(lines), HEADER, rows)


KIND = Step("batches", section=_section)
