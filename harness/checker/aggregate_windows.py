"""An aggregate per event-time window (contract/aggregates.py `window`): each record in every window its event time
falls in, less those the job's watermark dropped from a window (harness/evidence/watermark.py: from the watermark
each of its batches ran with and the offsets it read); each group named with its window's start, as the output's
rows are (their `start` field: ISO text or epoch milliseconds, `window.start` inside a struct)."""

from __future__ import annotations

from datetime import datetime, timezone

import pandas as pd

from harness.evidence.intervals import interval_ms
from harness.evidence.watermark import dropped_rows, windows_of


def spans(window: dict) -> tuple[int, int]:
    """The window's length and slide (ms)."""
    return interval_ms(window["size"]), interval_ms(window["slide"])


def in_windows(records: pd.DataFrame, window: dict, events: list[dict]) -> pd.DataFrame:
    """`records` (group, topic, partition, offset, event_time_ms, ...) once per window each falls in, their group
    named with its window's start (window_start_ms, window_end_ms set), `late` where the watermark dropped the
    record from that window."""
    size, slide = spans(window)
    index, starts = windows_of(records.event_time_ms.to_numpy(), size, slide)
    placed = records.iloc[index].reset_index(drop=True).assign(window_start_ms=starts, window_end_ms=starts + size)
    late = []
    for topic in placed.topic.unique():
        mine = records[records.topic == topic]
        if len(mine):
            dropped = dropped_rows(events, topic, mine, size, slide)
            late.append(dropped[["partition", "offset", "window_start_ms"]].assign(topic=topic))
    placed = placed.assign(late=False)
    if late:
        behind = pd.concat(late, ignore_index=True).drop_duplicates().assign(behind=True)
        marked = placed.merge(behind, on=["topic", "partition", "offset", "window_start_ms"], how="left")
        placed = placed.assign(late=marked.behind.notna().to_numpy())
    return placed.assign(group=windowed(placed.group, placed.window_start_ms))


def windowed(groups: pd.Series, start_ms: pd.Series) -> pd.Series:
    """Each group named with its window's start: "k0003 @ 2026-12-03T11:00:10Z"."""
    return pd.Series(
        [f"{g} @ {_iso(int(s))}" if s is not None and s == s else f"{g} @ ?" for g, s in zip(groups, start_ms)],
        index=groups.index,
        dtype=object,
    )


def _iso(ms: int) -> str:
    moment = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + (f".{ms % 1000:03d}" if ms % 1000 else "") + "Z"


def start_ms(value) -> float | None:
    """A window's start as an output row holds it: ISO text (UTC where it names no zone), epoch milliseconds, or
    epoch seconds (a number below 10^11); None where it is none of them."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value * 1000 if abs(value) < 1e11 else value)
    try:
        moment = pd.Timestamp(str(value))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.tz_localize("UTC")
    return float(moment.value // 1_000_000)


def reached(row: dict, path: str):
    """The value at `path` of a row (window.start: a field inside a struct)."""
    value = row
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def open_windows(groups: pd.DataFrame, final_watermark_ms: int) -> set[str]:
    """The groups whose window ends after the job's last watermark: not yet due in append mode."""
    return set(groups.group[groups.window_end_ms.to_numpy() > final_watermark_ms])
