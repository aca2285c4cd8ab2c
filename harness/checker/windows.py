"""Stateful pipelines: each (key, window) count at the egress against the acknowledged records.

For a window w: A acknowledged records with event time in w, U records of
unknown outcome, D acknowledged records the counter dropped behind its
watermark (harness.evidence.watermark), C the count in the egress's final
state (0 when the window is absent).

    records missing      max(A - C, 0), of which min(D, missing) explained by the watermark
    records over-counted max(C - (A + U), 0)
    phantom window       a window in the state with no record sent for it
    still open           absent, and ending after the counter's last watermark: not yet due
    duplicated delivery  a window delivered to the egress more than once
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import pandas as pd
import pyarrow as pa

from contract.query_events import QUERY_PROGRESS
from harness.checker.findings import WindowCounts
from harness.checker.intermediate import WindowTally
from harness.checker.load import Egress, Evidence
from harness.checker.reconcile import Counts
from harness.checker.window_cells import judge
from harness.evidence.intervals import interval_ms
from harness.evidence.watermark import dropped_rows, windows_of


@dataclass(frozen=True)
class WindowReconciliation:
    summary: WindowCounts
    counts: Counts
    anomalous: pd.DataFrame  # key (text), window_start_ms, window_cells.COLUMNS: the windows any witness is of, in
    #                          key (as first seen), then start order


def counter_of(evidence: Evidence):
    """The keyed windowed aggregation whose counts the window egress holds."""
    return next((s for s in evidence.streamlets if s.window), None)


def final_watermark(events: list[dict]) -> int:
    marks = [
        pd.Timestamp(e["progress"]["eventTime"]["watermark"]).value // 1_000_000
        for e in events
        if e.get("event") == QUERY_PROGRESS and e["progress"].get("eventTime", {}).get("watermark")
    ]
    return max(marks, default=0)


def spark_rows_dropped(events: list[dict]) -> int | None:
    """Spark's own count, numRowsDroppedByWatermark summed over the counter's batches and stateful operators: rows
    reaching the stateful operator, which after partial aggregation stand for any number of input records."""
    progress = [e["progress"] for e in events if e.get("event") == QUERY_PROGRESS]
    if not any("stateOperators" in p for p in progress):  # no progress of Spark's own (an application's checkpoint)
        return None
    return sum(int(op.get("numRowsDroppedByWatermark") or 0) for p in progress for op in p.get("stateOperators") or [])


def _read(evidence: Evidence, counter) -> tuple[str, pd.DataFrame] | None:
    """The topic the counter reads and the acknowledged records read there (rid, partition, offset, key,
    event_time_ms): from its recording, or from the acknowledgement log when it reads the source (an application
    counting the source's records)."""
    records = evidence.sent[evidence.sent.acked]
    topic = counter.inputs[0] if counter.inputs else None
    if topic in evidence.topics:
        return topic, evidence.topics[topic][["rid", "partition", "offset"]].merge(
            records[["rid", "key", "event_time_ms"]], on="rid"
        )
    if topic is not None and topic == evidence.pipeline.source_topic:
        return topic, records[["rid", "partition", "offset", "key", "event_time_ms"]]
    return None


def window_tally(evidence: Evidence) -> WindowTally | None:
    """A windowed count's cells judged from the evidence loaded whole (None: the run counts no windows)."""
    egress, counter = next((e for e in evidence.egresses if e.windowed), None), counter_of(evidence)
    return _tallied(evidence, egress, counter) if egress is not None and counter is not None else None


def reconcile_windows(evidence: Evidence, tally: WindowTally) -> WindowReconciliation:
    """The window counts judged, from the cells an engine tallied (`tally`)."""
    counter = counter_of(evidence)
    totals, anomalous = tally.totals, tally.anomalous
    codes = evidence.ids.codes(pa.array(anomalous.key.to_numpy(), pa.string()))
    anomalous = anomalous.iloc[np.lexsort((anomalous.window_start_ms.to_numpy(), codes))].reset_index(drop=True)
    events = evidence.progress.get(counter.name) or []
    spark = "spark_rows_dropped_by_watermark"  # Spark's own count, from its progress; the rest are the cells'
    judged = {f.name: getattr(totals, f.name) for f in fields(WindowCounts) if f.name != spark}
    summary = WindowCounts(**judged, spark_rows_dropped_by_watermark=spark_rows_dropped(events))
    counts = Counts(
        acked=tally.acked,
        unknown=tally.unknown,
        lost=summary.records_missing,
        duplicated_deliveries=totals.duplicated_deliveries,
        duplicated_in_state=summary.records_over_counted,
        phantom=summary.phantom,
        reordered=0,
    )
    return WindowReconciliation(summary, counts, anomalous)


def window_spans(counter) -> tuple[int, int]:
    """The counter's window length and slide (ms)."""
    size = interval_ms(counter.window)
    return size, interval_ms(counter.window_slide) if counter.window_slide else size


def _tallied(evidence: Evidence, egress: Egress, counter) -> WindowTally:
    """Every cell's tallies from the evidence loaded whole, judged."""
    size, slide = window_spans(counter)
    sent = evidence.sent
    index, starts = windows_of(sent.event_time_ms.to_numpy(), size, slide)
    acked = sent.acked.to_numpy()[index]
    expected = pd.DataFrame(
        {
            "key": sent.key.to_numpy()[index],
            "window_start_ms": starts,
            "acked": acked.astype(np.int64),
            "unknown": (~acked).astype(np.int64),
        }
    )
    expected = expected.groupby(["key", "window_start_ms"], as_index=False).sum()

    dropped = pd.DataFrame({"rid": pd.Series(dtype="int64"), "batch_id": pd.Series(dtype="int64")})
    read = _read(evidence, counter)
    events = evidence.progress.get(counter.name) or []
    if read is not None:
        dropped = dropped_rows(events, read[0], read[1], size, slide)
        dropped = dropped.drop_duplicates(["rid", "window_start_ms"])
    late = pd.DataFrame(
        {
            "key": dropped.key.to_numpy() if len(dropped) else np.array([], np.int64),
            "window_start_ms": dropped.window_start_ms.to_numpy() if len(dropped) else np.array([], np.int64),
        }
    )
    late = late.groupby(["key", "window_start_ms"]).size().rename("dropped").reset_index()

    state = egress.state[["key", "window_start_ms", "count"]]
    deliveries = egress.audit.groupby(["key", "window_start_ms"]).size().rename("deliveries").reset_index()
    table = (
        expected.merge(late, how="outer", on=["key", "window_start_ms"])
        .merge(state, how="outer", on=["key", "window_start_ms"])
        .merge(deliveries, how="outer", on=["key", "window_start_ms"])
    )
    stored = table["count"].notna().to_numpy()
    table = table.fillna(0).astype({c: "int64" for c in ("acked", "unknown", "dropped", "count", "deliveries")})
    start = table.window_start_ms.to_numpy()
    judged = judge(
        *(table[c].to_numpy() for c in ("acked", "unknown", "dropped", "count")),
        stored,
        table.deliveries.to_numpy(),
        start,
        size,
        final_watermark(events),
    )
    keys, code = evidence.keys, table.key.to_numpy()[judged.judged]
    known = (code >= 0) & (code < len(keys))
    text = np.where(known, keys[np.where(known, code, 0)] if len(keys) else None, None)
    anomalous = judged.anomalous
    cells = pd.DataFrame({"key": text, "window_start_ms": start[judged.judged]})
    for name, values in judged.columns.items():
        cells[name] = values
    acked_records = int(sent.acked.sum())
    return WindowTally(judged.totals, cells[anomalous].reset_index(drop=True), acked_records, len(sent) - acked_records)
