"""An output kind of one's own: a folder of JSON-lines files a job writes from foreachBatch, one file per attempt at
a batch (`<batch>-<attempt>.jsonl`), then commits the batch by writing the file's name to `_committed/<batch>`.

Use it in a scenario of applications (the scenario's folder, where its kinds of one's own are imported from, holds
this file):

    outputs:
      events:
        kind: "jsonl_folder:KIND"
        identity: {key: key, seq: seq}

The job is given the folder as ${path.events}. docs/applications.md explains each part.
"""

from __future__ import annotations

import json
from pathlib import Path

from contract.applications import FILE_OUTPUT
from contract.egress import RECORDS
from harness.outputs import OutputKind
from harness.outputs.files import PATH, record_tables
from harness.outputs.kind import IDENTITY, RECEIVES, WRITTEN_BY
from harness.outputs.tables import record_export
from pipelines.audit import ExportedEvidence

COMMITS = "_committed"


def parse(spec) -> dict:
    """Its fields: where its rows carry the identity, the application writing it, what it receives."""
    return {"identity": spec.identity(), "written_by": spec.writer(), "receives": spec.receives()}


def committed(folder: Path) -> dict[str, int]:
    """Data file name -> its batch, for each batch's committed attempt."""
    marks = sorted((folder / COMMITS).glob("*")) if (folder / COMMITS).is_dir() else []
    return {mark.read_text().strip(): int(mark.name) for mark in marks if mark.name.isdigit()}


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


class Probe:
    """When the job last committed a batch (an in-flight kill's moment)."""

    def __init__(self, folder: Path):
        self.folder = folder

    def latest_ms(self) -> int:
        marks = list((self.folder / COMMITS).glob("*")) if (self.folder / COMMITS).is_dir() else []
        return max((m.stat().st_mtime_ns // 1_000_000 for m in marks), default=0)

    def delivered(self) -> None:
        return None

    def close(self) -> None:
        pass


class Folder:
    """One output of this kind in a run: the Sink the runner asks (harness/outputs/kind.py)."""

    def __init__(self, run, name: str, settings: dict):
        self.run, self.name, self.identity = run, name, settings["identity"]
        self.folder = run.layout.workdir(name) / "events"

    def prepare(self) -> dict:
        self.folder.mkdir(parents=True, exist_ok=True)
        return {"folder": str(self.folder)}

    def placeholders(self) -> dict[str, str]:
        return {f"path.{self.name}": str(self.folder)}

    def reader(self):
        return self.identity, lambda: [
            {"value": row} for name in committed(self.folder) for row in rows(self.folder / name)
        ]

    def probe(self) -> Probe:
        return Probe(self.folder)

    def export(self) -> dict:
        batches = committed(self.folder)
        files = sorted(self.folder.glob("*.jsonl"), key=lambda p: p.stat().st_mtime_ns)
        written = [(batches.get(p.name), p.stat().st_mtime_ns // 1_000_000, rows(p)) for p in files]
        tables = record_tables(self.identity, written)
        ExportedEvidence.of(self.run.driver_paths(self.name)).write(tables)
        exported = {"files": len(files), "uncommitted_files": sum(1 for p in files if p.name not in batches)}
        record_export(self.run, self.name, exported, None)
        return exported


KIND = OutputKind(
    "jsonl-folder",
    FILE_OUTPUT,
    "a folder of JSON-lines files, one per attempt at a batch, committed by a marker per batch",
    marker="kind",
    fields=(IDENTITY, WRITTEN_BY, RECEIVES),
    parse=parse,
    evidence=lambda settings: RECORDS,
    sink=Folder,
    placeholders=(PATH,),
    offers=lambda name, raw: {PATH.prefix: name},
)
