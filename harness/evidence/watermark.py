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

from contract.query_events import QUERY_PROGRESS
from harness.evidence.progress import source_offsets


def _iso_ms(text: str) -> int:
    return int(pd.Timestamp(text).value // 1_000_000)


def batch_ranges(events: list[dict], topic: str) -> pd.DataFrame:
    """One row per (batch, partition): offsets [start, end) read, the batch's watermark, and the
    watermark its late-row filter used."""
    rows = []
    for e in events:
        if e.get("event") != QUERY_PROGRESS:
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


def _read_by(records: pd.DataFrame, ranges: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Each (record, batch range) pair where the range read the record: its partition's, its offset within [start,
    end); in the records' order, then the ranges'. Found per partition by binary search over the records sorted by
    offset (one slice per range), not by pairing every record with every range."""
    partition, offset = records.partition.to_numpy(), records.offset.to_numpy()
    which_record, which_range = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    for number, group in ranges.groupby("partition", sort=False).indices.items():
        mine = np.flatnonzero(partition == number)
        mine = mine[np.argsort(offset[mine], kind="stable")]
        sorted_offsets = offset[mine]
        low = np.searchsorted(sorted_offsets, ranges.start.to_numpy()[group], "left")
        lengths = np.maximum(np.searchsorted(sorted_offsets, ranges.end.to_numpy()[group], "left") - low, 0)
        within = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        which_record.append(mine[np.repeat(low, lengths) + within])
        which_range.append(np.repeat(group, lengths))
    rows, taken = np.concatenate(which_record), np.concatenate(which_range)
    order = np.lexsort((taken, rows))
    return rows[order], taken[order]


def dropped_rows(events: list[dict], topic: str, records: pd.DataFrame, size: int, slide: int) -> pd.DataFrame:
    """The records (partition, offset, event_time_ms, ...) dropped behind the watermark, with their batch and the
    window they were dropped from (window_start_ms: a record of sliding windows may be late for some only)."""
    ranges = batch_ranges(events, topic).reset_index(drop=True)
    if ranges.empty or records.empty:
        return records.iloc[0:0].assign(batch_id=pd.Series(dtype="int64"), window_start_ms=pd.Series(dtype="int64"))
    rows, taken = _read_by(records, ranges)
    read = ranges.drop(columns=["partition", "start", "end"]).iloc[taken].reset_index(drop=True)
    merged = pd.concat([records.iloc[rows].reset_index(drop=True), read], axis=1)
    index, starts = windows_of(merged.event_time_ms.to_numpy(), size, slide)
    late = starts + size <= merged.late_watermark_ms.to_numpy()[index]
    return merged.iloc[index[late]].assign(window_start_ms=starts[late]).reset_index(drop=True)
