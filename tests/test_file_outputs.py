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
from contract.table_files import DELTA_CHANGES, data_files, delta_live_files, read_rows, spark_committed_files
from harness.outputs.files import FileOutput, FileProbe, UnreadTable
from harness.outputs.kinds.delta_table import FORMAT as DELTA
from harness.outputs.kinds.iceberg_table import FORMAT as ICEBERG
from harness.outputs.kinds.iceberg_table import IcebergTable, deleted_positions
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
        "copied_rows": 0,
        "changed_rows": 0,
        "cut_files": [cut.name],
        "doubt": None,
    }
    with sqlite3.connect(tmp_path / "lake.sqlite") as db:
        state = sorted(db.execute("SELECT key, seq, batch_id FROM records"))
        deliveries = sorted(db.execute("SELECT key, seq, batch_id FROM audit"))
    assert state == [("k1", 1, 0), ("k1", 2, 0), ("k1", 3, 1)]
    assert deliveries == [("k1", 1, 0), ("k1", 2, 0), ("k1", 3, -1), ("k1", 3, 1)]

    # In columnar form: the same rows as segments, no store.
    audit, records = tmp_path / "lake.audit", tmp_path / "lake.records"
    columnar = ExportedEvidence(tmp_path / "none.sqlite", str(audit), str(records))
    assert FileOutput(table, DELTA, IDENTITY).export(columnar) == exported
    assert _rows(records) == state and _rows(audit / MAIN_QUERY) == deliveries
    assert not (tmp_path / "none.sqlite").exists()

    probe = FileProbe(FileOutput(table, DELTA, IDENTITY))
    assert probe.latest_ms() > 0 and probe.delivered() == 4 and probe.removed() == {}  # the cut file is no one's yet
    (table / "part-0-c.parquet").unlink()  # a VACUUM of the file no commit lists
    assert probe.removed() == {table / "part-0-c.parquet": 1}


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
    # A VACUUM removed the first file: the rewrite is the only trace of its rows, counted as their delivery.
    first.unlink()
    exported = FileOutput(table, DELTA, IDENTITY).export(ExportedEvidence(tmp_path / "v.sqlite"), vanished=True)
    with sqlite3.connect(tmp_path / "v.sqlite") as con:
        deliveries = sorted(con.execute("SELECT key, seq FROM audit"))
    assert deliveries == [("k1", 1), ("k1", 2), ("k1", 3), ("k1", 3)] and exported["rows"] == 3


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


def _merged_by_delta_rs(table: Path, change_data_feed: bool) -> None:
    """A real writer's copy-on-write MERGEs (delta-rs): k1-1..3 written; a replay of k1-3 (its values again) with a
    new k1-4 upserted; then k1-2 upserted with a new amount. Each MERGE rewrites the one file, copying the rest."""
    from deltalake import DeltaTable, write_deltalake

    config = {"delta.enableChangeDataFeed": str(change_data_feed).lower()}
    write_deltalake(str(table), pa.table({"order_id": ["k1-1", "k1-2", "k1-3"], "amount": [1.0, 1.0, 1.0]}))
    if change_data_feed:
        DeltaTable(str(table)).alter.set_table_properties(config)
    for ids, amount in ((["k1-3", "k1-4"], 1.0), (["k1-2"], 9.0)):
        source = pa.table({"order_id": ids, "amount": [amount] * len(ids)})
        merge = DeltaTable(str(table)).merge(source, "t.order_id = s.order_id", source_alias="s", target_alias="t")
        merge.when_matched_update_all().when_not_matched_insert_all().execute()


@pytest.mark.parametrize("change_data_feed", [False, True])
def test_a_merge_copying_a_files_other_rows_delivers_what_it_changed_not_its_copies(tmp_path, change_data_feed):
    """Without a change data feed the copies are the rows equal to those of the file replaced, and the replay's
    update to the values k1-3 had is one of them: unattributed, so the deliveries are a lower bound. With one, each
    commit's inserts and updates are its deliveries: k1-3 delivered again."""
    table = tmp_path / "merged"
    _merged_by_delta_rs(table, change_data_feed)
    exported, state, deliveries = _state(table, tmp_path / "m.sqlite")
    assert [row[:2] for row in state] == [("k1", 1), ("k1", 2), ("k1", 3), ("k1", 4)]
    again = [("k1", 3)] if change_data_feed else []
    assert deliveries == sorted([("k1", 1), ("k1", 2), ("k1", 2), ("k1", 3), ("k1", 4), *again])
    assert (exported["copied_rows"], exported["changed_rows"]) == ((0, 3) if change_data_feed else (6, 0))
    assert (exported["doubt"] or "").startswith("" if change_data_feed else "1 row(s) updated by MERGE or UPDATE")
    assert bool(exported["doubt"]) is not change_data_feed
    assert not any(DELTA_CHANGES in p.parts for p in data_files(table))


ICEBERG_MERGES = Path(__file__).parent / "frozen_tables" / "iceberg-merge"  # written by its make.py


@pytest.mark.parametrize(
    "mode, deliveries, copied",
    [
        # each MERGE's new rows in new files, the rows it replaced deleted by position delete files: k1-3 and
        # k1-2 delivered again, nothing copied
        ("mor", ["k1-1", "k1-2", "k1-2", "k1-3", "k1-3", "k1-4"], 0),
        # each MERGE and the DELETE rewrite the one file: the rows equal to the replaced file's are copies (the
        # replay's update of k1-3 to the values it had among them: a doubt), k1-2's new amount a delivery
        ("cow", ["k1-1", "k1-2", "k1-2", "k1-3", "k1-4"], 9),
    ],
)
def test_an_iceberg_tables_merges_are_read_as_a_reader_sees_them_and_deliver_what_they_changed(
    tmp_path, mode, deliveries, copied
):
    """Spark 4.0 with Iceberg 1.10 wrote k1-1..3, MERGEd (k1-3 as it was, k1-4), MERGEd (k1-2 with a new amount)
    and DELETEd k1-1, in merge-on-read and in copy-on-write (make.py); Spark read k1-2, k1-3 and k1-4 back."""
    output = FileOutput(ICEBERG_MERGES / mode, ICEBERG, IDENTITY)
    exported = output.export(ExportedEvidence(tmp_path / "lake.sqlite"))
    with sqlite3.connect(tmp_path / "lake.sqlite") as con:
        state = sorted(f"{k}-{s}" for k, s in con.execute("SELECT key, seq FROM records"))
        delivered = sorted(f"{k}-{s}" for k, s in con.execute("SELECT key, seq FROM audit"))
    assert state == ["k1-2", "k1-3", "k1-4"] and delivered == deliveries
    assert exported["copied_rows"] == copied and bool(exported["doubt"]) is bool(copied)
    assert exported["deleted_rows"] == (3 if mode == "mor" else 0)
    assert sorted(r["value"]["order_id"] for r in output.rows()) == state


def test_an_iceberg_equality_delete_deletes_the_rows_of_older_files_holding_its_values(tmp_path):
    """An equality delete file (as Flink writes them) of order_id k1-3 at sequence 3: it deletes k1-3 from the files
    of a lower sequence number, not from one written with or after it."""
    table = IcebergTable(ICEBERG_MERGES / "mor")
    first = next(p for p in (ICEBERG_MERGES / "mor" / "data").glob("*.parquet") if "deletes" not in p.name)
    newer = tmp_path / "newer.parquet"
    pq.write_table(pa.table({"order_id": ["k1-3"], "amount": [1.0]}), newer)
    deletes = tmp_path / "eq-deletes.parquet"
    pq.write_table(pa.table({"order_id": ["k1-3"]}), deletes)
    data = {first.name: (str(first), 1), newer.name: (str(newer), 3)}
    file = {"content": 2, "file_path": str(deletes), "file_format": "PARQUET", "equality_ids": [1]}
    ids = pq.read_table(first).column("order_id").to_pylist()
    assert deleted_positions(table, data, [(file, 3)]) == {first.name: frozenset({ids.index("k1-3")})}
    puffin = {**file, "content": 1, "file_format": "PUFFIN"}
    with pytest.raises(UnreadTable, match="deletion vectors"):
        deleted_positions(table, data, [(puffin, 3)])
