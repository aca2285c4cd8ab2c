"""Reading Spark's checkpoint logs: offsets/N (what batch N reads) and commits/N (batch N done)."""

from __future__ import annotations

import json
from pathlib import Path


def _batch_ids(folder: Path) -> list[int]:
    if not folder.is_dir():
        return []
    return sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit())


def planned_batches(checkpoint: Path) -> list[int]:
    """Batch ids whose offsets were written (planned, maybe not finished)."""
    return _batch_ids(Path(checkpoint) / "offsets")


def committed_batches(checkpoint: Path) -> list[int]:
    """Batch ids marked done in commits/."""
    return _batch_ids(Path(checkpoint) / "commits")


def batch_end_offsets(checkpoint: Path, batch_id: int) -> dict:
    """{topic: {partition: offset}} that batch `batch_id` reads up to (its offsets/ entry)."""
    lines = (Path(checkpoint) / "offsets" / str(batch_id)).read_text().splitlines()
    return json.loads(lines[-1])


def last_planned(checkpoint: Path) -> dict:
    """The newest batch in offsets/ with its end offsets, or {} when there is none."""
    batches = planned_batches(checkpoint)
    if not batches:
        return {}
    return {"batch": batches[-1], "offsets": batch_end_offsets(checkpoint, batches[-1])}


def committed_positions(checkpoint: Path) -> dict[tuple[str, int], int]:
    """{(topic, partition): offset} a query has committed up to: the end offsets of its last committed batch."""
    batches = committed_batches(checkpoint)
    if not batches:
        return {}
    ends = batch_end_offsets(checkpoint, batches[-1])
    return {
        (topic, int(p)): int(o) for topic, parts in ends.items() if isinstance(parts, dict) for p, o in parts.items()
    }
