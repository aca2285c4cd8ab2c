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

A MERGE, UPDATE or DELETE: in merge-on-read, its new rows go in new data files (deliveries) and the rows it replaced
are deleted by delete files, applied here as the spec says (position deletes by file and position, equality deletes
by the values of the columns they name, each by sequence number); in copy-on-write, it replaces the data files
holding those rows with new ones, the rows it did not change copied: rows equal to a row of the files replaced are
copies, no deliveries, and since an update that wrote the values a row had looks the same, such an output is
observed only in part. A table with deletion vectors (format v3, Puffin files) is not read.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import unquote

import fastavro

from harness.outputs.files import Committed, Rewrites, TableFormat, UnreadTable, copied_rows, file_kind

HINT = "version-hint.text"  # in a table's metadata folder: the number of its current metadata file
EPOCH = "spark.sql.streaming.epochId"  # a snapshot summary's: the streaming sink's epoch (its batch)
ADDED, DELETED = 1, 2  # a manifest entry's status: the file was added, or removed, by that snapshot
REPLACE = "replace"  # a snapshot's operation that rewrote files and changed no rows (a compaction)
REWRITING = ("overwrite", "delete")  # the operations of a copy-on-write MERGE, UPDATE or DELETE
DELETE_FILE_SUFFIX = "-deletes.parquet"  # how Spark names the delete files it writes in a table's data folder
POSITION_DELETES = 1  # a delete file's content: positions of rows (else 2: equality deletes, values of columns)


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


def _local(path: str, table: Path, location: str) -> Path:
    """A file the table's metadata names, found under the table's folder where the job named the table's location
    elsewhere (a path bound in its world: harness/runner/world.py)."""
    path, location = (unquote(p.removeprefix("file:")).rstrip("/") for p in (path, location))
    return table / path[len(location) + 1 :] if path.startswith(location + "/") else Path(path)


def _avro(path: str, table: Path, location: str) -> list[dict]:
    """An Avro file the table's metadata names (a manifest list, a manifest)."""
    with open(_local(path, table, location), "rb") as f:
        return list(fastavro.reader(f))


class IcebergTable:
    """One table's current metadata: its snapshots, where its files are, its current schema's column names."""

    def __init__(self, table: Path):
        self.table, self.metadata = table, current_metadata(table)
        self.location = self.metadata.get("location", str(table))
        self.snapshots = {s["snapshot-id"]: s for s in self.metadata.get("snapshots", [])}
        schemas = self.metadata.get("schemas") or [self.metadata.get("schema", {})]
        schema = next((x for x in schemas if x.get("schema-id") == self.metadata.get("current-schema-id")), schemas[0])
        self.columns = {f["id"]: f["name"] for f in schema.get("fields", [])}

    def avro(self, path: str) -> list[dict]:
        return _avro(path, self.table, self.location)

    def rows(self, path: str, columns: list[str] | None = None) -> list[dict]:
        """A data or delete file's rows (an Iceberg data file holds its partition columns too); UnreadTable where
        it cannot be read."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            return pq.read_table(_local(path, self.table, self.location), columns=columns).to_pylist()
        except (pa.ArrowInvalid, OSError):
            raise UnreadTable(f"{Path(unquote(path)).name}: a file its metadata names cannot be read") from None


def _sequence(entry: dict, manifest: dict) -> int:
    """A manifest entry's data sequence number (null: its manifest's, inherited; a format v1 table: 0)."""
    found = entry.get("sequence_number")
    return manifest.get("sequence_number") or 0 if found is None else found


def committed_files(folder: Path) -> Committed:
    """Data file name -> the batch of the snapshot that added it, for every data file of each table's current
    snapshot, and the positions of its rows the current delete files delete."""
    found: dict[str, int] = {}
    deleted: dict[str, frozenset[int]] = {}
    rewritten: set[str] = set()
    for table in tables(folder):
        t = IcebergTable(table)
        current = t.snapshots.get(t.metadata.get("current-snapshot-id"))
        if current is None:  # created, nothing committed yet
            continue
        batch = {sid: int(s.get("summary", {}).get(EPOCH, -1)) for sid, s in t.snapshots.items()}
        rewritten |= _rewritten(t)
        data: dict[str, tuple[str, int]] = {}  # data file name -> its path, its data sequence number
        deletes: list[tuple[dict, int]] = []  # delete file, its sequence number
        for manifest in t.avro(current["manifest-list"]):
            for entry in t.avro(manifest["manifest_path"]):
                if entry["status"] == DELETED:
                    continue
                file, sequence = entry["data_file"], _sequence(entry, manifest)
                if manifest.get("content", 0) != 0:  # delete files: no rows of their own, but rows of others deleted
                    deletes.append((file, sequence))
                    continue
                added_by = entry.get("snapshot_id") or manifest["added_snapshot_id"]  # null: inherited (format v2)
                name = Path(unquote(file["file_path"])).name
                found[name], data[name] = batch.get(added_by, -1), (file["file_path"], sequence)
        deleted |= deleted_positions(t, data, deletes)
    return Committed(found, deleted, frozenset(rewritten))


def deleted_positions(
    t: IcebergTable, data: dict[str, tuple[str, int]], deletes: list[tuple[dict, int]]
) -> dict[str, frozenset]:
    """The positions of each data file's rows its table's delete files delete: a position delete file's (file_path,
    pos) in files of a sequence number not above its own; an equality delete file's values in the columns it names,
    in files of a lower sequence number (the spec's rules)."""
    gone: dict[str, set[int]] = {}
    for file, sequence in deletes:
        if str(file.get("file_format", "")).upper() == "PUFFIN":
            raise UnreadTable("its table has deletion vectors (Puffin files, format v3), not read here")
        if file["content"] == POSITION_DELETES:
            for row in t.rows(file["file_path"], ["file_path", "pos"]):
                name = Path(unquote(row["file_path"])).name
                if name in data and data[name][1] <= sequence:
                    gone.setdefault(name, set()).add(row["pos"])
            continue
        columns = [t.columns[i] for i in file.get("equality_ids") or ()]
        values = {tuple(row.get(c) for c in columns) for row in t.rows(file["file_path"], columns)}
        for name, (path, data_sequence) in data.items():
            if data_sequence < sequence:
                rows = t.rows(path, columns)
                found = (i for i, row in enumerate(rows) if tuple(row.get(c) for c in columns) in values)
                gone.setdefault(name, set()).update(found)
    return {name: frozenset(positions) for name, positions in gone.items() if positions}


def _own_entries(t: IcebergTable, sid: int, snapshot: dict) -> list[dict]:
    """The data file entries a snapshot wrote: the files it added and those it removed."""
    found = []
    for manifest in t.avro(snapshot["manifest-list"]):
        if manifest.get("content", 0) == 0 and manifest.get("added_snapshot_id") == sid:
            found += [e for e in t.avro(manifest["manifest_path"]) if e.get("snapshot_id") in (sid, None)]
    return found


def _rewritten(t: IcebergTable) -> set[str]:
    """The data files each `replace` snapshot of the table added (a compaction's rewrites), current or not."""
    found = set()
    for sid, snapshot in t.snapshots.items():
        if snapshot.get("summary", {}).get("operation") == REPLACE:
            entries = _own_entries(t, sid, snapshot)
            found |= {Path(unquote(e["data_file"]["file_path"])).name for e in entries if e["status"] == ADDED}
    return found


def rewrites(folder: Path) -> Rewrites:
    """Of each file a copy-on-write snapshot (an `overwrite` or `delete` replacing files: a MERGE, UPDATE or
    DELETE) added, the positions of its rows equal in every column to a row of the files it removed (each of those
    taken once): copies, or updates that wrote the values a row had, which Iceberg's metadata does not tell apart."""
    copies, copied = {}, 0
    for table in tables(folder):
        t = IcebergTable(table)
        for sid, snapshot in t.snapshots.items():
            if snapshot.get("summary", {}).get("operation") not in REWRITING:
                continue
            entries = _own_entries(t, sid, snapshot)
            paths = {
                status: [e["data_file"]["file_path"] for e in entries if e["status"] == status]
                for status in (ADDED, DELETED)
            }
            if not (paths[ADDED] and paths[DELETED]):
                continue
            added = {Path(unquote(path)).name: t.rows(path) for path in paths[ADDED]}
            found = copied_rows([t.rows(path) for path in paths[DELETED]], added)
            copies.update(found)
            copied += sum(len(positions) for positions in found.values())
    return Rewrites(copies, doubt=COPIED.format(copied) if copied else None)


COPIED = (
    "{:,} row(s) that copy-on-write commits (a MERGE, UPDATE or DELETE rewriting files) wrote equal to rows of the "
    "files they replaced: copies, or updates that wrote the values a row had, which Iceberg's metadata does not tell "
    "apart (its changelog drops both as carry-overs), so none is counted as delivered again"
)


def latest_commit_ms(folder: Path) -> int:
    """When a table's newest metadata file was written: its last commit (0: no table yet)."""
    written = [p.stat().st_mtime_ns // 1_000_000 for t in tables(folder) for p in (t / "metadata").glob("v*.json")]
    return max(written, default=0)


def data_files(folder: Path) -> list[Path]:
    """Every data file of each table, committed or not, in the order they were written (not the delete files Spark
    writes beside them, named so)."""
    found = [
        p
        for t in tables(folder)
        for p in (t / "data").rglob("*.parquet")
        if not p.name.startswith(".") and not p.name.endswith(DELETE_FILE_SUFFIX)
    ]
    return sorted(found, key=lambda p: (p.stat().st_mtime_ns, p.name))


FORMAT = TableFormat("iceberg", committed_files, latest_commit_ms, data_files, rewrites)
# The Iceberg release with a Spark runtime for each Spark line (jars/iceberg/pom.xml); none is served for 4.2 yet.
RELEASES = {"3.5": "1.10.0", "4.0": "1.10.0", "4.1": "1.11.0", "4.2": None}

KIND = file_kind(
    "iceberg-table",
    "an Apache Iceberg table the job writes in a Hadoop-style catalog whose warehouse is ${path.NAME}",
    FORMAT,
    jar_sets={"iceberg": RELEASES},
)
