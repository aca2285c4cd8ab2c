"""The built-in store's large query results read from SQLite once per check: while a check with an engine reads its
evidence three times (naming every record, the engine's count, the notable records' rows), a query's blocks are kept
as they come in an Arrow IPC file in a temporary folder, and the later passes read that file instead of the database
(at 50M records the store's state took about 15 s each time from SQLite, about 2 s from the copy).

Only within `kept_for_one_check()` (check.py), whose folder is removed when it ends, and only for a database that has
not changed since it was copied (its size and time, and its write-ahead log's): a copy never outlives the check.
"""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pyarrow as pa

from harness.checker.scratch import scratch

FEWEST_ROWS = 1 << 20  # a query with fewer rows is read again from SQLite (quick): no copy is kept
_state: dict = {"folder": None, "copies": {}}  # one check's: shared with the reader threads, hence not a ContextVar


@contextmanager
def kept_for_one_check() -> Iterator[None]:
    """The store's large query results copied as they are first read, and read again from the copies, until the end."""
    with scratch("store") as folder:
        _state["folder"], _state["copies"] = folder, {}
        try:
            yield
        finally:
            _state["folder"], _state["copies"] = None, {}


def _stamp(db: Path) -> tuple:
    wal = db.with_name(db.name + "-wal")
    return tuple((p.stat().st_size, p.stat().st_mtime_ns) if p.exists() else None for p in (db, wal))


def copied(db: Path, sql: str) -> Path | None:
    """The copy of the query's whole result, if one was kept and the database is as it was then."""
    copy = _state["copies"].get((str(db), sql))
    return copy[1] if copy is not None and copy[0] == _stamp(db) else None


def blocks_of(copy: Path) -> Iterator[pa.RecordBatch]:
    with pa.memory_map(str(copy)) as source, pa.ipc.open_stream(source) as reader:
        yield from reader


class Copying:
    """A query's blocks written to a copy as they are read; kept by `done()` only when every block went in with one
    schema and there were at least FEWEST_ROWS of them (otherwise, and when the reading stops short, let go)."""

    def __init__(self, db: Path, sql: str | None):
        """`sql`: the query copied (None: none is)."""
        self.key, self.stamp = (str(db), sql), _stamp(db)
        folder = _state["folder"] if sql is not None else None
        self.path = None
        if folder is not None:
            handle, name = tempfile.mkstemp(suffix=".arrows", dir=folder)
            os.close(handle)
            self.path = Path(name)
        self.sink: pa.NativeFile | None = None
        self.writer: pa.ipc.RecordBatchStreamWriter | None = None
        self.schema: pa.Schema | None = None
        self.rows = 0

    def add(self, block: pa.RecordBatch) -> None:
        if self.path is None:
            return
        if self.writer is None:
            options = pa.ipc.IpcWriteOptions(compression="lz4")  # a third of the size, read back at memory's speed
            self.sink, self.schema = pa.OSFile(str(self.path), "wb"), block.schema
            self.writer = pa.ipc.new_stream(self.sink, block.schema, options=options)
        if block.schema != self.schema:  # a column's type changed from one block to the next: no copy
            self.drop()
            return
        self.writer.write_batch(block)
        self.rows += block.num_rows

    def done(self) -> None:
        """The whole result went in: kept for the check's later passes (when large enough)."""
        self._close()
        if self.path is not None and self.rows >= FEWEST_ROWS and _state["folder"] is not None:
            _state["copies"][self.key] = (self.stamp, self.path)
            self.path = None  # the check's now: removed with its folder
        self.drop()

    def drop(self) -> None:
        self._close()
        if self.path is not None:
            self.path.unlink(missing_ok=True)
            self.path = None

    def _close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.sink.close()
            self.writer = self.sink = None
