"""Reading a table of files without Spark (contract/table_files.py, harness/outputs/files.py): committed
files from Delta's and the file sink's logs, partition columns from the folders, a file cut by a kill named and
not counted. Tables made here with pyarrow and logs written as Spark and Delta write them; the real sinks are
judged end to end in tests/test_application_files.py."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from contract.egress import MAIN_QUERY
from contract.segments import read_segments
from contract.table_files import data_files, delta_live_files, read_rows, spark_committed_files
from harness.outputs.files import FileOutput, FileProbe, UnreadTable
from harness.outputs.kinds.delta_table import FORMAT as DELTA
from harness.outputs.kinds.parquet_files import FORMAT as PARQUET
from pipelines.audit import ExportedEvidence
from tests.delta_vectors import inline, on_disk

IDENTITY = {"id": "order_id"}


def _file(folder: Path, name: str, ids: list[str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    pq.write_table(pa.table({"order_id": ids, "amount": [1.0] * len(ids)}), path)
    return path


def _delta_commit(table: Path, version: int, txn: int | None, add: list[str], remove: list[str] = ()) -> None:
    log = table / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    actions = [{"commitInfo": {"operation": "STREAMING UPDATE"}}]
    actions += [{"txn": {"appId": "q", "version": txn}}] if txn is not None else []
    actions += [{"add": {"path": p, "dataChange": True}} for p in add]
    actions += [{"remove": {"path": p}} for p in remove]
    (log / f"{version:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")


def test_delta_files_live_in_the_log_and_a_cut_file_is_named_not_counted(tmp_path):
    table = tmp_path / "table"
    _file(table, "part-0-a.parquet", ["k1-1", "k1-2"])
    _file(table, "part-0-b.parquet", ["k1-3"])
    _file(table, "part-0-c.parquet", ["k1-3"])  # the same batch written again by an attempt that never committed
    cut = _file(table, "part-0-d.parquet", ["k1-4"])
    cut.write_bytes(cut.read_bytes()[:-20])  # SIGKILLed mid-write: no footer
    _delta_commit(table, 0, 0, ["part-0-a.parquet"])
    _delta_commit(table, 1, 1, ["part-0-b.parquet", "part-0-x.parquet"], remove=["part-0-x.parquet"])
    assert delta_live_files(table) == {"part-0-a.parquet": 0, "part-0-b.parquet": 1}
    assert read_rows(table, cut) is None and len(data_files(table)) == 4

    exported = FileOutput(table, DELTA, IDENTITY).export(ExportedEvidence(tmp_path / "lake.sqlite"))
    assert exported == {
        "rows": 3,
        "deliveries": 4,
        "files": 4,
        "uncommitted_files": 2,
        "deleted_rows": 0,
        "rewritten_files": 0,
        "cut_files": [cut.name],
    }
    with sqlite3.connect(tmp_path / "lake.sqlite") as db:
        state = sorted(db.execute("SELECT key, seq, batch_id FROM records"))
        deliveries = sorted(db.execute("SELECT key, seq, batch_id FROM audit"))
    assert state == [("k1", 1, 0), ("k1", 2, 0), ("k1", 3, 1)]
    assert deliveries == [("k1", 1, 0), ("k1", 2, 0), ("k1", 3, -1), ("k1", 3, 1)]
    assert FileProbe(FileOutput(table, DELTA, IDENTITY)).latest_ms() > 0

    # In columnar form: the same rows as segments, no store.
    audit, records = tmp_path / "lake.audit", tmp_path / "lake.records"
    columnar = ExportedEvidence(tmp_path / "none.sqlite", str(audit), str(records))
    assert FileOutput(table, DELTA, IDENTITY).export(columnar) == exported
    assert _rows(records) == state and _rows(audit / MAIN_QUERY) == deliveries
    assert not (tmp_path / "none.sqlite").exists()


def _rows(folder: Path) -> list[tuple]:
    table, problems = read_segments(folder)
    assert not problems
    return sorted(zip(*(table[c].to_pylist() for c in ("key", "seq", "batch_id"))))


def test_the_file_sinks_log_compacts_and_partition_folders_are_columns(tmp_path):
    table = tmp_path / "table"
    _file(table / "customer=ada", "part-0-a.parquet", ["k1-1"])
    _file(table / "customer=b%20b", "part-0-b.parquet", ["k2-1"])
    _file(table / "customer=ada", "part-0-c.parquet", ["k1-2"])
    log = table / "_spark_metadata"
    log.mkdir()

    def entry(name: str) -> str:
        return json.dumps({"path": f"file://{table}/{name}", "action": "add", "size": 1})

    (log / "0").write_text("v1\n" + entry("customer=ada/part-0-a.parquet") + "\n")
    # batch 1's compact file lists batch 0's files again, with its own
    (log / "1.compact").write_text(
        "v1\n" + entry("customer=ada/part-0-a.parquet") + "\n" + entry("customer=b%20b/part-0-b.parquet") + "\n"
    )
    (log / ".1.compact.crc").write_bytes(b"\0")
    assert spark_committed_files(table) == {"part-0-a.parquet": 0, "part-0-b.parquet": 1}
    rows = read_rows(table, table / "customer=b%20b" / "part-0-b.parquet")
    assert rows == [{"order_id": "k2-1", "amount": 1.0, "customer": "b b"}]
    exported = FileOutput(table, PARQUET, IDENTITY).export(ExportedEvidence(tmp_path / "lake.sqlite"))
    assert (exported["rows"], exported["deliveries"], exported["uncommitted_files"]) == (2, 3, 1)


def _windows(folder: Path, name: str, rows: list[tuple[str, int, int]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    starts = pa.array([s * 1000 for _, s, _ in rows], pa.timestamp("ms"))  # a timestamp without a zone, as Spark's
    data = {"account": [k for k, _, _ in rows], "window": pa.StructArray.from_arrays([starts], ["start"])}
    pq.write_table(pa.table({**data, "orders": [c for _, _, c in rows]}), folder / name)
    return folder / name


def test_window_rows_a_reader_sums_in_append_mode_and_takes_the_last_in_update_mode(tmp_path):
    table = tmp_path / "table"
    _windows(table, "part-0-a.parquet", [("k1", 0, 3), ("k2", 0, 1)])
    _windows(table, "part-0-b.parquet", [("k1", 0, 3)])  # batch 0's windows appended again by its replay
    _windows(table, "part-0-c.parquet", [("k1", 10, 2)])  # written, never committed
    _delta_commit(table, 0, 0, ["part-0-a.parquet"])
    _delta_commit(table, 1, 1, ["part-0-b.parquet"])
    window = {"size": "10 seconds", "slide": "10 seconds", "key": "account", "start": "window.start", "count": "orders"}
    for mode, k1 in (("append", 6), ("update", 3)):
        db = tmp_path / f"{mode}.sqlite"
        exported = FileOutput(table, DELTA, None, {**window, "mode": mode}).export(ExportedEvidence(db))
        assert (exported["rows"], exported["deliveries"], exported["uncommitted_files"]) == (2, 4, 1)
        with sqlite3.connect(db) as con:
            state = sorted(con.execute("SELECT key, window_start_ms, window_end_ms, count FROM windows"))
            audit = sorted(con.execute("SELECT key, window_start_ms, count, batch_id FROM window_audit"))
        assert state == [("k1", 0, 10_000, k1), ("k2", 0, 10_000, 1)], mode
        assert audit == [("k1", 0, 3, 0), ("k1", 0, 3, 1), ("k1", 10_000, 2, -1), ("k2", 0, 1, 0)]


# A table with deletion vectors, written as Delta writes one: a protocol naming the feature, a MERGE's commit adding
# a file's path again with its new vector and removing it with its old one, the vectors in the protocol's format.
def _commit(table: Path, version: int, *actions: dict) -> None:
    log = table / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    (log / f"{version:020d}.json").write_text("".join(json.dumps(a) + "\n" for a in actions))


def _add(path: Path, dv: dict | None = None) -> dict:
    add = {"path": path.name, "partitionValues": {}, "size": path.stat().st_size, "modificationTime": 0}
    add["stats"] = json.dumps({"numRecords": pq.read_metadata(path).num_rows})
    return {"add": add | {"dataChange": True} | ({"deletionVector": dv} if dv else {})}


def _remove(path: Path, dv: dict | None = None) -> dict:
    remove = {"path": path.name, "deletionTimestamp": 0, "dataChange": True, "size": path.stat().st_size}
    return {"remove": remove | ({"deletionVector": dv} if dv else {})}


def _dv_table(table: Path, reader_features: list[str] = ("deletionVectors",), mapping: str | None = None) -> Path:
    """Created with deletion vectors, one batch appended (txn 0: k1-1, k1-2, k1-3)."""
    table.mkdir(parents=True)
    schema = {
        "type": "struct",
        "fields": [
            {"name": n, "type": t, "nullable": True, "metadata": {}}
            for n, t in (("order_id", "string"), ("amount", "double"))
        ],
    }
    configuration = {"delta.enableDeletionVectors": "true"} | ({"delta.columnMapping.mode": mapping} if mapping else {})
    features = list(reader_features)
    _commit(
        table,
        0,
        {
            "protocol": {
                "minReaderVersion": 3,
                "minWriterVersion": 7,
                "readerFeatures": features,
                "writerFeatures": features,
            }
        },
        {
            "metaData": {
                "id": "t",
                "format": {"provider": "parquet", "options": {}},
                "schemaString": json.dumps(schema),
                "partitionColumns": [],
                "configuration": configuration,
                "createdTime": 0,
            }
        },
    )
    first = _file(table, "part-0-a.parquet", ["k1-1", "k1-2", "k1-3"])
    _commit(table, 1, {"txn": {"appId": "q", "version": 0}}, _add(first))
    return first


def _state(table: Path, db: Path) -> tuple[dict, list, list]:
    exported = FileOutput(table, DELTA, IDENTITY).export(ExportedEvidence(db))
    with sqlite3.connect(db) as con:
        state = sorted(con.execute("SELECT key, seq, batch_id FROM records"))
        deliveries = sorted(con.execute("SELECT key, seq FROM audit"))
    return exported, state, deliveries


def test_a_merge_marking_rows_deleted_keeps_the_file_less_its_deleted_rows(tmp_path):
    table = tmp_path / "merged"
    first = _dv_table(table)
    # A MERGE updating k1-2 and k1-3 (a replay): their new rows in a new file, the old ones deleted by a vector on
    # disk; the file's path added again with it and removed with none, in one commit.
    second = _file(table, "part-0-b.parquet", ["k1-2", "k1-3"])
    dv = on_disk(table, [1, 2])
    _commit(table, 2, _add(second), _add(first, dv), _remove(first))
    assert delta_live_files(table) == {"part-0-a.parquet": 0, "part-0-b.parquet": -1}  # the kept rows are batch 0's
    exported, state, deliveries = _state(table, tmp_path / "2.sqlite")
    assert state == [("k1", 1, 0), ("k1", 2, -1), ("k1", 3, -1)]
    assert deliveries == [("k1", 1), ("k1", 2), ("k1", 2), ("k1", 3), ("k1", 3)]  # each file's rows once
    assert (exported["rows"], exported["deliveries"], exported["deleted_rows"]) == (3, 5, 2)

    # Another MERGE deleting k1-1 too: the vector inline now, replacing the one on disk.
    _commit(table, 3, _add(first, inline([0, 1, 2])), _remove(first, dv))
    _, state, _ = _state(table, tmp_path / "3.sqlite")
    assert state == [("k1", 2, -1), ("k1", 3, -1)]
    rows = FileOutput(table, DELTA, IDENTITY).rows()
    assert sorted(r["value"]["order_id"] for r in rows) == ["k1-2", "k1-3"]


def test_a_compactions_rewrite_is_in_the_state_and_delivers_nothing_again(tmp_path):
    table = tmp_path / "compacted"
    first, second = _file(table, "part-0-a.parquet", ["k1-1", "k1-2"]), _file(table, "part-0-b.parquet", ["k1-3"])
    _commit(table, 0, {"txn": {"appId": "q", "version": 0}}, _add(first))
    _commit(table, 1, {"txn": {"appId": "q", "version": 1}}, _add(second))
    # Statistics recomputed: a file added again with dataChange false, its rows still the batch's delivery.
    _commit(table, 2, {"add": _add(second)["add"] | {"dataChange": False}})
    # OPTIMIZE: the two files' rows in one new file, added and the old ones removed with dataChange false.
    whole = _file(table, "part-0-c.parquet", ["k1-1", "k1-2", "k1-3"])
    no_change = {"dataChange": False}
    _commit(
        table,
        3,
        {"commitInfo": {"operation": "OPTIMIZE"}},
        {"add": _add(whole)["add"] | no_change},
        {"remove": _remove(first)["remove"] | no_change},
        {"remove": _remove(second)["remove"] | no_change},
    )
    exported, state, deliveries = _state(table, tmp_path / "c.sqlite")
    assert state == [("k1", 1, -1), ("k1", 2, -1), ("k1", 3, -1)]
    assert deliveries == [("k1", 1), ("k1", 2), ("k1", 3)]  # the batches' files; the rewrite delivers nothing
    assert (exported["rows"], exported["deliveries"], exported["rewritten_files"]) == (3, 3, 1)


def test_a_damaged_vector_or_a_reader_feature_not_read_leaves_the_table_unread(tmp_path):
    damaged = tmp_path / "damaged"
    first = _dv_table(damaged)
    _commit(damaged, 2, _add(first, on_disk(damaged, [0], damaged=True)), _remove(first))
    for table, named in (
        (damaged, "checksum"),
        (_dv_table(tmp_path / "mapped", ["deletionVectors", "columnMapping"], "name").parent, "columnMapping"),
        (_dv_table(tmp_path / "widened", ["typeWidening"]).parent, "typeWidening"),
    ):
        with pytest.raises(UnreadTable, match=named):
            FileOutput(table, DELTA, IDENTITY).export(ExportedEvidence(tmp_path / f"{table.name}.sqlite"))
        assert not (tmp_path / f"{table.name}.sqlite").exists()
