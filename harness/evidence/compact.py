"""`harness compact RUN_DIR`: a run directory's JSON-lines topic recordings rewritten in the columnar form
(harness/evidence/topics.py), for the checker to read quickly and the run to keep little; the report stays the same.

A Kafka output's recording has the output's identity read into its columns (pipeline.json says where it is). A
recording with a damaged line stays as it is (what the line held would be lost).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from contract.egress import TOPIC
from contract.segments import SegmentWriter
from harness.errors import HarnessError
from harness.evidence.description import PipelineDescription
from harness.evidence.layout import RunLayout
from harness.evidence.topics import RecordingColumns

LINES_PER_BATCH = 100_000


@dataclass(frozen=True)
class Compacted:
    """One recording, rewritten (or kept, with why)."""

    topic: str
    records: int
    bytes_before: int
    bytes_after: int
    kept_because: str | None = None


def compact_recording(dump: Path, folder: Path, identity: dict | None = None) -> int:
    """topics/<topic>.jsonl -> topics/<topic>/ segments; the dump is removed once they are written. Records written.
    Raises ValueError naming the first damaged line (nothing is removed then)."""
    staging = folder.with_name(folder.name + ".compacting")
    shutil.rmtree(staging, ignore_errors=True)
    columns, records = RecordingColumns(identity), 0
    with SegmentWriter(staging) as writer, open(dump, "rb") as lines:
        batch: list[dict] = []
        for number, line in enumerate(lines, 1):
            if not line.endswith(b"\n"):
                raise ValueError(f"line {number} cut mid-record")
            try:
                batch.append(json.loads(line))
            except ValueError:
                raise ValueError(f"line {number} damaged") from None
            if len(batch) == LINES_PER_BATCH:
                writer.write(columns.batch(batch))
                records, batch = records + len(batch), []
        writer.write(columns.batch(batch))
        records += len(batch)
    staging.rename(folder)
    dump.unlink()
    return records


def compact_run(run_dir: Path) -> list[Compacted]:
    layout = RunLayout(Path(run_dir))
    if not layout.root.is_dir():
        raise HarnessError(f"{run_dir}: no such run directory")
    try:
        pipeline = PipelineDescription.load(layout.pipeline)
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise HarnessError(f"{layout.pipeline}: unreadable ({exc}); the outputs' identities are unknown") from None
    identities = {t: s.identity for s in pipeline.streamlets if s.egress_evidence == TOPIC for t in s.inputs}
    done = []
    for dump in sorted(layout.topics.glob("*.jsonl")):
        topic, size = dump.stem, dump.stat().st_size
        folder = layout.topic_segments(topic)
        if folder.exists():
            done.append(Compacted(topic, 0, size, size, f"{folder.name}/ exists already"))
            continue
        try:
            records = compact_recording(dump, folder, identities.get(topic))
        except ValueError as exc:
            shutil.rmtree(folder.with_name(folder.name + ".compacting"), ignore_errors=True)
            done.append(Compacted(topic, 0, size, size, f"{exc}: kept whole"))
            continue
        after = sum(p.stat().st_size for p in folder.iterdir())
        done.append(Compacted(topic, records, size, after))
    return done
