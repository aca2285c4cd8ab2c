"""The copies on a source topic that its producer wrote again because the broker's response to a produce request
was lost (kafka-error's drop-response): the broker had appended the request's records, the producer never learned
of it and sent them again. kafka-requests.jsonl names each dropped request's partitions and the offset the broker
gave each one's first record; the source topic read back (source/TOPIC.parquet) holds what is there. A record at a
dropped offset has its other copies where it is written again, byte for byte (same partition, key and value); the
one its producer was acknowledged at (acks.csv) tells which record it is. An idempotent producer's retry is not
appended again: its records have one copy, and nothing is counted."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from harness.evidence.layout import RunLayout
from harness.network.wire import UNANSWERED


def lost_responses(layout: RunLayout, gaps: list[str]) -> dict[tuple[str, int], list[int]]:
    """Per (topic, partition), the offsets of the records of produce requests whose response was dropped (none: the
    run has no kafka-requests.jsonl; one it cannot read is a gap)."""
    if not layout.kafka_requests.is_file():
        return {}
    try:
        return _dropped_offsets(layout.kafka_requests.read_text())
    except (ValueError, KeyError, TypeError) as exc:
        gaps.append(f"kafka-requests.jsonl: unreadable ({exc!r}); copies from lost produce responses not told")
        return {}


def _dropped_offsets(text: str) -> dict[tuple[str, int], list[int]]:
    found: dict[tuple[str, int], list[int]] = {}
    for line in text.splitlines():
        entry = json.loads(line)
        if entry.get("api") != "produce" or entry.get("action") not in UNANSWERED or not entry.get("answered"):
            continue
        sent = {(p["topic"], p["partition"]): sum(b["records"] for b in p["batches"]) for p in entry["partitions"]}
        for answer in entry["answered"]:
            count = sent.get((answer["topic"], answer["partition"]), 0)
            if answer["error_code"] == 0 and answer["base_offset"] >= 0:
                offsets = range(answer["base_offset"], answer["base_offset"] + count)
                found.setdefault((answer["topic"], answer["partition"]), []).extend(offsets)
    return found


def _copies_of_dropped(path, offsets: dict[int, list[int]]) -> pd.DataFrame:
    """The rows of a source topic that repeat a row at a dropped offset (same partition, key and value), with the
    size of each such group."""
    rows = pq.read_table(path, columns=["partition", "offset", "key", "value"]).to_pandas()
    dropped = pd.MultiIndex.from_tuples([(p, o) for p, found in offsets.items() for o in found])
    at = pd.MultiIndex.from_arrays([rows.partition, rows.offset]).isin(dropped)
    wanted = rows[at][["partition", "key", "value"]].drop_duplicates()
    groups = rows.merge(wanted, on=["partition", "key", "value"])
    return groups.assign(size=groups.groupby(["partition", "key", "value"]).offset.transform("size"))


def retried_copies(
    lost: dict[tuple[str, int], list[int]],
    layout: RunLayout,
    sent: pd.DataFrame,
    keys: np.ndarray,
    gaps: list[str],
    sources: tuple[str, ...],
) -> np.ndarray:
    """Per row of `sent` (rid, key code, acked, partition, offset), its copies on the `sources` topics beyond the one
    its producer learned of that a lost produce response (`lost`: lost_responses) made; zeros where none was."""
    found = np.zeros(len(sent), np.int64)
    by_topic: dict[str, dict[int, list[int]]] = {}
    for (topic, partition), offsets in lost.items():
        if topic in sources:
            by_topic.setdefault(topic, {})[partition] = offsets
    place = pd.Series(np.arange(len(sent)), index=pd.MultiIndex.from_arrays([sent.partition, sent.offset]))
    place = place[sent.acked.to_numpy() & (sent.offset.to_numpy() >= 0)]
    place = place[~place.index.duplicated(keep="last")]  # a place acknowledged twice is the later record's (truncated)
    for topic, offsets in by_topic.items():
        path = layout.source_records(topic)
        if not path.is_file():
            gaps.append(f"source/{path.name}: missing; the copies lost produce responses made on {topic} not told")
            continue
        groups = _copies_of_dropped(path, offsets)
        known = groups[pd.MultiIndex.from_arrays([groups.partition, groups.offset]).isin(place.index)]
        rows = place.reindex(pd.MultiIndex.from_arrays([known.partition, known.offset])).to_numpy()
        same_key = keys[sent.key.to_numpy()[rows]] == known.key.to_numpy()
        found[rows[same_key]] += known["size"].to_numpy()[same_key] - 1
    return found
