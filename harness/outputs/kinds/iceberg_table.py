"""An Apache Iceberg table an application writes (`format: iceberg`), in a Hadoop-style catalog: the job is given a
folder of the run's own as its warehouse (${path.NAME}) and keeps its table there (<warehouse>/<db>/<table>, or the
folder itself for a table by path). The job gets Iceberg's Spark runtime from the harness (jars/iceberg/pom.xml).

Read without Spark: `metadata/version-hint.text` names the table's current metadata file, whose current snapshot
lists its manifests (Avro, its manifest list), which list the table's data files. Those are the committed ones;
every Parquet file under `data/` is a delivery, committed or not (Spark's Iceberg streaming sink skips a replayed
epoch at or below the last it committed, and the files the replay wrote stay on disk, never committed). A file's
batch is the epoch its snapshot's summary records (`spark.sql.streaming.epochId`: the streaming sink's), -1 for a
snapshot without one (a foreachBatch append). A file a `replace` snapshot added (a compaction,
rewrite_data_files) holds rows of the files it replaced: in the state while it is current, no delivery of its own.
Appends only: a table whose current snapshot has delete files (a MERGE, UPDATE or DELETE in merge-on-read) is not
read, rather than counted as if they were not there.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import unquote

import fastavro

from harness.outputs.files import Committed, TableFormat, UnreadTable, file_kind

HINT = "version-hint.text"  # in a table's metadata folder: the number of its current metadata file
EPOCH = "spark.sql.streaming.epochId"  # a snapshot summary's: the streaming sink's epoch (its batch)
ADDED, DELETED = 1, 2  # a manifest entry's status: the file was added, or removed, by that snapshot
REPLACE = "replace"  # a snapshot's operation that rewrote files and changed no rows (a compaction)


def tables(folder: Path) -> list[Path]:
    """The Iceberg tables in a warehouse folder (the folder itself, for a table by path). A table's own folders are
    not walked: an in-flight kill asks this many times a second while the job writes data files."""
    found = []
    for root, dirs, _ in os.walk(folder):
        if (Path(root) / "metadata" / HINT).is_file():
            found.append(Path(root))
            dirs.clear()
    return sorted(found)


def current_metadata(table: Path) -> dict:
    """The table's metadata its version hint names."""
    version = (table / "metadata" / HINT).read_text().strip()
    return json.loads((table / "metadata" / f"v{version}.metadata.json").read_text())


def _avro(path: str, table: Path, location: str) -> list[dict]:
    """An Avro file the table's metadata names, found under the table's folder where the job named the table's
    location elsewhere (a path bound in its world: harness/runner/world.py)."""
    path, location = (unquote(p.removeprefix("file:")).rstrip("/") for p in (path, location))
    local = table / path[len(location) + 1 :] if path.startswith(location + "/") else Path(path)
    with open(local, "rb") as f:
        return list(fastavro.reader(f))


def committed_files(folder: Path) -> Committed:
    """Data file name -> the batch of the snapshot that added it, for every data file of each table's current
    snapshot; UnreadTable where it has delete files."""
    found: dict[str, int] = {}
    rewritten: set[str] = set()
    for table in tables(folder):
        metadata = current_metadata(table)
        snapshots = {s["snapshot-id"]: s for s in metadata.get("snapshots", [])}
        current = snapshots.get(metadata.get("current-snapshot-id"))
        if current is None:  # created, nothing committed yet
            continue
        batch = {sid: int(s.get("summary", {}).get(EPOCH, -1)) for sid, s in snapshots.items()}
        location = metadata.get("location", str(table))
        rewritten |= _rewritten(table, location, snapshots)
        for manifest in _avro(current["manifest-list"], table, location):
            entries = _avro(manifest["manifest_path"], table, location)
            if manifest.get("content", 0) != 0:  # delete files: no rows of their own, but rows of others deleted
                if any(entry["status"] != DELETED for entry in entries):
                    raise UnreadTable("its table has delete files (rows deleted in merge-on-read), not read here")
                continue
            for entry in entries:
                if entry["status"] == DELETED:
                    continue
                added_by = entry.get("snapshot_id") or manifest["added_snapshot_id"]  # null: inherited (format v2)
                found[Path(unquote(entry["data_file"]["file_path"])).name] = batch.get(added_by, -1)
    return Committed(found, rewritten=frozenset(rewritten))


def _rewritten(table: Path, location: str, snapshots: dict[int, dict]) -> set[str]:
    """The data files each `replace` snapshot of the table added (a compaction's rewrites), current or not."""
    found = set()
    for sid, snapshot in snapshots.items():
        if snapshot.get("summary", {}).get("operation") != REPLACE:
            continue
        for manifest in _avro(snapshot["manifest-list"], table, location):
            if manifest.get("content", 0) == 0 and manifest.get("added_snapshot_id") == sid:
                entries = _avro(manifest["manifest_path"], table, location)
                found |= {Path(unquote(e["data_file"]["file_path"])).name for e in entries if e["status"] == ADDED}
    return found


def latest_commit_ms(folder: Path) -> int:
    """When a table's newest metadata file was written: its last commit (0: no table yet)."""
    written = [p.stat().st_mtime_ns // 1_000_000 for t in tables(folder) for p in (t / "metadata").glob("v*.json")]
    return max(written, default=0)


def data_files(folder: Path) -> list[Path]:
    """Every data file of each table, committed or not, in the order they were written."""
    found = [p for t in tables(folder) for p in (t / "data").rglob("*.parquet") if not p.name.startswith(".")]
    return sorted(found, key=lambda p: (p.stat().st_mtime_ns, p.name))


FORMAT = TableFormat("iceberg", committed_files, latest_commit_ms, data_files)
# The Iceberg release with a Spark runtime for each Spark line (jars/iceberg/pom.xml); none is served for 4.2 yet.
RELEASES = {"3.5": "1.10.0", "4.0": "1.10.0", "4.1": "1.11.0", "4.2": None}

KIND = file_kind(
    "iceberg-table",
    "an Apache Iceberg table the job writes in a Hadoop-style catalog whose warehouse is ${path.NAME}",
    FORMAT,
    jar_sets={"iceberg": RELEASES},
)
