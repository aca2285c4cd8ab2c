"""Offsets over time, from the run's evidence: each partition's log start and end as sampled (history `offsets`),
and how far each streamlet's committed batches had read (its progress events' end offsets)."""

from __future__ import annotations

import pandas as pd

from contract.query_events import QUERY_PROGRESS
from harness.evidence.history import OFFSETS
from harness.evidence.progress import source_offsets

SAMPLE_COLUMNS = ["ts", "topic", "partition", "log_start", "log_end"]
READ_COLUMNS = ["ts", "topic", "partition", "committed"]


def offset_samples(history: list[dict]) -> pd.DataFrame:
    rows = [
        (e["ts_ms"], r[0], int(r[1]), int(r[2]), int(r[3]))
        for e in history
        if e["event"] == OFFSETS
        for r in e.get("partitions", [])
    ]
    return pd.DataFrame(rows, columns=SAMPLE_COLUMNS)


def committed_ends(events: list[dict], inputs: tuple[str, ...] | list[str]) -> pd.DataFrame:
    """When each batch of a streamlet finished, the end offset it had read to in each partition of its inputs."""
    rows = [
        (e["ts_ms"], topic, int(p), int(o))
        for e in events
        if e.get("event") == QUERY_PROGRESS
        for source in e["progress"].get("sources", [])
        for topic, parts in source_offsets(source.get("endOffset")).items()
        if topic in inputs
        for p, o in parts.items()
    ]
    return pd.DataFrame(rows, columns=READ_COLUMNS)
