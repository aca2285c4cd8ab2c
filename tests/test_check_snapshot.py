"""A run still going read as one snapshot (harness/checker/snapshot.py): within a check's snapshot, rows its writers
append after the first reading are not seen by the later passes (segments, JSON lines, the SQLite store), and they
are seen again once it ends."""

from __future__ import annotations

import sqlite3

import pyarrow as pa

from contract.segments import SegmentWriter, read_segments
from harness.checker import snapshot
from harness.checker.egress_readers import egress_blocks
from harness.checker.file_readers import json_lines


def _rows(folder) -> int:
    table, _ = read_segments(folder)
    return table.num_rows


def _stored(db) -> int:
    return sum(b.num_rows for b in egress_blocks(db, "SELECT n FROM t", lambda b: b))


def test_rows_written_after_the_first_reading_are_not_read_within_a_snapshot(tmp_path):
    folder, lines, db = tmp_path / "topic", tmp_path / "history.jsonl", tmp_path / "store.sqlite"
    writer = SegmentWriter(folder)
    writer.write(pa.table({"n": [1, 2]}))
    lines.write_text('{"event": "a"}\n')
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE t (n INTEGER)")
        conn.executemany("INSERT INTO t VALUES (?)", [(1,), (2,)])
    with snapshot.taken():
        assert (_rows(folder), _stored(db), len(json_lines(lines, "h", [], ()))) == (2, 2, 1)
        writer.write(pa.table({"n": [3]}))  # a batch more in the open segment
        writer.write(pa.table({"m": ["x"]}))  # a new segment (another schema)
        with lines.open("a") as out:
            out.write('{"event": "b"}\n')
        with sqlite3.connect(db) as conn:
            conn.execute("INSERT INTO t VALUES (3)")
        assert (_rows(folder), _stored(db), len(json_lines(lines, "h", [], ()))) == (2, 2, 1)
    assert (_rows(folder), _stored(db), len(json_lines(lines, "h", [], ()))) == (4, 3, 2)
    writer.close()
