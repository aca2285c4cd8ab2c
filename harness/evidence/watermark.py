"""Which input rows a windowed aggregation dropped behind its watermark, row by row.

Spark's own numRowsDroppedByWatermark counts rows *after partial aggregation*
(one per key and window in a batch), not input records. The records are
recovered from the evidence instead: each progress event names the offset
range a batch read and its watermark. Since Spark 3.4 a batch filters late
input with the watermark of the batch before it (its own watermark only
evicts state), so a record read by batch N is dropped when its window ended
at or before batch N-1's watermark.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from harness.evidence.progress import source_offsets


def _iso_ms(text: str) -> int:
    return int(pd.Timestamp(text).value // 1_000_000)


def batch_ranges(events: list[dict], topic: str) -> pd.DataFrame:
    """One row per (batch, partition): offsets [start, end) read, the batch's watermark, and the
    watermark its late-row filter used."""
    rows = []
    for e in events:
        if e.get("event") != "progress":
            continue
        p = e["progress"]
        watermark = _iso_ms(p.get("eventTime", {}).get("watermark", "1970-01-01T00:00:00Z"))
        for source in p.get("sources", []):
            start, end = (source_offsets(source.get(k)) for k in ("startOffset", "endOffset"))
            for partition, stop in end.get(topic, {}).items():
                rows.append((p["batchId"], int(partition), start.get(topic, {}).get(partition, 0), stop, watermark))
    ranges = pd.DataFrame(rows, columns=["batch_id", "partition", "start", "end", "watermark_ms"])
    # A replayed batch reports again; the last report of a batch id is the one that committed.
    ranges = ranges.drop_duplicates(["batch_id", "partition"], keep="last").sort_values("batch_id")
    # The watermark that filters late rows in a batch: the highest of the batches before it.
    by_batch = ranges.groupby("batch_id").watermark_ms.max()
    late_filter = by_batch.cummax().shift(1, fill_value=0).rename("late_watermark_ms")
    return ranges.merge(late_filter, left_on="batch_id", right_index=True)


def windows_of(event_ms: np.ndarray, size: int, slide: int) -> tuple[np.ndarray, np.ndarray]:
    """The windows each event time falls in (length `size`, sliding by `slide`, which divides it; tumbling when
    equal): (row index, window start) per (row, window), size // slide of them per row."""
    base = (event_ms // slide) * slide
    per = size // slide
    index = np.repeat(np.arange(len(event_ms)), per)
    starts = np.repeat(base, per) - np.tile(np.arange(per, dtype=np.int64) * slide, len(event_ms))
    return index, starts


def dropped_rows(events: list[dict], topic: str, records: pd.DataFrame, size: int, slide: int) -> pd.DataFrame:
    """The records (partition, offset, event_time_ms, ...) dropped behind the watermark, with their batch and the
    window they were dropped from (window_start_ms: a record of sliding windows may be late for some only)."""
    ranges = batch_ranges(events, topic)
    if ranges.empty or records.empty:
        return records.iloc[0:0].assign(batch_id=pd.Series(dtype="int64"), window_start_ms=pd.Series(dtype="int64"))
    merged = records.merge(ranges, on="partition")
    merged = merged[(merged.offset >= merged.start) & (merged.offset < merged.end)].reset_index(drop=True)
    rows, starts = windows_of(merged.event_time_ms.to_numpy(), size, slide)
    merged = merged.iloc[rows].assign(window_start_ms=starts).reset_index(drop=True)
    late = merged[merged.window_start_ms + size <= merged.late_watermark_ms]
    return late.drop(columns=["start", "end"]).reset_index(drop=True)
