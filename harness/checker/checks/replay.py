"""What each restart replayed: the copies a restarted streamlet wrote again, and when their records were sent.

A driver killed between two checkpoints loses what it did since the last one (its last batch committed before the
kill), and its restart does it again: a micro-batch query replays the batch in flight; a Real-time Mode query (an
application's `trigger: real-time`), whose batch is a whole checkpoint interval, emits again everything it emitted
since that checkpoint. Per fault that restarted a streamlet, beside its recovery (to the first output after it,
and to the first batch committed after it: harness/checker/faults.py): the copies made by its replay (at any hop:
a Kafka output's copies are its application's; harness/checker/copies.py), the span of time their records were
sent in, and when the streamlet last committed a batch before the kill. Read from the copies, the history and the
streamlet's query events alone.
"""

from __future__ import annotations

import numpy as np

from contract.applications import MICRO_BATCH
from contract.query_events import QUERY_PROGRESS
from harness.checker.copies import ACCOUNTING
from harness.checker.fault_results import FAULTS
from harness.checker.intermediate import FaultSpan
from harness.checker.rid_sets import isin
from harness.checker.section import Section
from harness.checker.step import Context, Step

HEADER = (
    "fault",
    "streamlet",
    "trigger",
    "last checkpoint (s before the kill)",
    "copies written again",
    "of records sent from (s before the kill)",
    "to (s before the kill)",
    "first output after the kill (s)",
    "recovery (s)",
)


def last_checkpoint_ms(events: list[dict] | None, before_ms: int) -> int | None:
    """When the streamlet last committed a batch before `before_ms` (its query events), None when it had not or
    its events are missing."""
    times = [e["ts_ms"] for e in events or () if e.get("event") == QUERY_PROGRESS and e.get("ts_ms", 0) <= before_ms]
    return max(times) if times else None


def _row(context: Context, index: int, span: FaultSpan, trigger: str) -> tuple:
    made = context[ACCOUNTING].made
    mine = made[made.fault.to_numpy() == index]
    checkpoint = last_checkpoint_ms(context.evidence.progress.get(span.target), span.start_ms)
    sent = context.evidence.sent
    sent_ms = sent.event_time_ms.to_numpy()[isin(sent.rid.to_numpy(), np.unique(mine.rid.to_numpy()))]
    before_s = (span.start_ms - sent_ms.astype(np.int64)) / 1000
    result = next((f for f in context[FAULTS] if f.number == span.number), None)
    return (
        span.number,
        span.target,
        trigger,
        None if checkpoint is None else round((span.start_ms - checkpoint) / 1000, 3),
        len(mine),
        round(float(before_s.max()), 3) if len(before_s) else None,
        round(float(before_s.min()), 3) if len(before_s) else None,
        None if result is None else result.output_s,
        None if result is None else result.recovery_s,
    )


def _section(context: Context) -> Section | None:
    triggers = {s.name: s.settings.get("trigger") or MICRO_BATCH for s in context.evidence.streamlets}
    rows = tuple(
        _row(context, i, span, triggers[span.target])
        for i, span in enumerate(context.spans)
        if span.restarts and span.target in context.evidence.progress
    )
    if not rows:
        return None
    lines = (
        "each restart's replay: the copies its streamlet wrote again after the kill, of records it had written "
        "since its last checkpoint (a micro-batch query: the batch in flight; a real-time one: everything since)",
    )
    return Section("Replays", lines, HEADER, rows)


KIND = Step("replay", section=_section, needs=(ACCOUNTING, FAULTS))
