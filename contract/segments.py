"""Columnar evidence: a folder of Arrow IPC stream segments (NNNNNN.arrows), written append-only, read whole.

A writer appends record batches to its open segment and flushes each one to the operating system, so a killed
writer loses nothing it wrote; a segment is closed (synced to disk) when it holds `rows_per_segment` rows or when a
batch's columns differ from the segment's (a new streamlet's batch stamp), and the next one is opened. A reader
takes every whole batch of every segment: a segment cut mid-batch (a machine that went down with it open, a disk
that filled) keeps the batches before the cut and the cut is named, as a torn last line of a JSON log is.

Arrow's stream format and not Parquet: a Parquet file is readable only once its footer is written, an IPC stream
batch by batch (https://arrow.apache.org/docs/format/Columnar.html#ipc-streaming-format).
"""

from __future__ import annotations

import json
import os
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator

import pyarrow as pa

SUFFIX = ".arrows"
ROWS_PER_SEGMENT = 1_000_000
COMPRESSION = "zstd"  # batch by batch: a segment stays readable up to its last whole batch


ARROW = (pa.Array, pa.ChunkedArray)


def _text(value) -> str | None:
    return value if value is None or isinstance(value, str) else json.dumps(value)


def identity_columns(keys, seqs) -> dict[str, pa.Array]:
    """A record's identity as columns: `key` (text), `seq` (int64; null where a seq is not an integer) and, only
    when some seq is not one, `seq_text` (it as written): the record, or a phantom, whatever the evidence held.
    `keys` and `seqs` are lists, or Arrow columns: text keys and integer seqs are taken as they are, no value
    converted in Python (an egress's audit of a record costs a third as much so)."""
    if isinstance(keys, ARROW) and isinstance(seqs, ARROW):
        if pa.types.is_string(keys.type) or pa.types.is_large_string(keys.type):
            if pa.types.is_integer(seqs.type) and not pa.types.is_uint64(seqs.type):
                return {"key": keys.cast(pa.string()), "seq": seqs.cast(pa.int64())}
    keys, seqs = (c.to_pylist() if isinstance(c, ARROW) else c for c in (keys, seqs))
    whole = [s if type(s) is int and -(1 << 63) <= s < (1 << 63) else None for s in seqs]  # not a bool: no seq
    columns = {"key": pa.array([_text(k) for k in keys], pa.string()), "seq": pa.array(whole, pa.int64())}
    if any(w is None and s is not None for w, s in zip(whole, seqs)):
        columns["seq_text"] = pa.array([_text(s) if w is None else None for w, s in zip(whole, seqs)], pa.string())
    return columns


class SegmentWriter:
    """Appends record batches to `folder`/NNNNNN.arrows segments (numbered on from the highest already there: a
    writer restarted in the same folder never rewrites what its predecessor wrote)."""

    def __init__(self, folder: Path, rows_per_segment: int = ROWS_PER_SEGMENT):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.rows_per_segment = rows_per_segment
        self._next = max((int(p.stem) for p in segments(self.folder)), default=-1) + 1
        self._file = None
        self._writer: pa.ipc.RecordBatchStreamWriter | None = None
        self._schema: pa.Schema | None = None
        self._rows = 0

    def write(self, batch: pa.RecordBatch | pa.Table) -> None:
        if not batch.num_rows:
            return
        if self._writer is not None and (not batch.schema.equals(self._schema) or self._rows >= self.rows_per_segment):
            self._close_segment()
        if self._writer is None:
            self._open(batch.schema)
        for part in batch.to_batches() if isinstance(batch, pa.Table) else [batch]:
            self._writer.write_batch(part)
        self._rows += batch.num_rows
        self._file.flush()

    def _open(self, schema: pa.Schema) -> None:
        self._file = open(self.folder / f"{self._next:06d}{SUFFIX}", "wb")
        self._next += 1
        options = pa.ipc.IpcWriteOptions(compression=COMPRESSION)
        self._writer = pa.ipc.new_stream(self._file, schema, options=options)
        self._schema, self._rows = schema, 0

    def _close_segment(self) -> None:
        self._writer.close()
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        self._writer = self._file = None

    def close(self) -> None:
        if self._writer is not None:
            self._close_segment()

    def __enter__(self) -> "SegmentWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


PARTIAL = ".partial"  # beside a folder replace_segments is writing


def replace_segments(folder: Path, tables: Iterable[pa.Table], rows_per_segment: int = ROWS_PER_SEGMENT) -> int:
    """Write `tables` as the folder's segments, replacing what it held, whole or not at all (an export, a compaction:
    written beside it, then renamed into place, so a reader finds the old segments or the new, never part of them);
    returns the rows written. An exception from `tables` leaves the folder as it was."""
    folder = Path(folder)
    partial, old = folder.with_name(folder.name + PARTIAL), folder.with_name(folder.name + ".old")
    for leftover in (partial, old):  # an export killed before it finished
        shutil.rmtree(leftover, ignore_errors=True)
    rows = 0
    with SegmentWriter(partial, rows_per_segment) as writer:
        for table in tables:
            writer.write(table)
            rows += table.num_rows
    if folder.exists():
        folder.rename(old)
    partial.rename(folder)
    shutil.rmtree(old, ignore_errors=True)
    return rows


_first: dict | None = None  # within as_first_read(): the segments each folder listed, the batches each segment gave


@contextmanager
def as_first_read() -> Iterator[None]:
    """Within it, a folder lists the segments it listed the first time and a segment gives the batches it gave the
    first time: a reader that reads evidence still being written in several passes reads the same rows in each."""
    global _first
    _first = {"folders": {}, "batches": {}}
    try:
        yield
    finally:
        _first = None


def segments(folder: Path) -> list[Path]:
    """The folder's segments in the order they were written."""
    found = sorted(p for p in Path(folder).glob(f"*{SUFFIX}") if p.stem.isdigit())
    return found if _first is None else _first["folders"].setdefault(str(Path(folder).resolve()), found)


def read_segment(path: Path, columns: list[str] | None = None) -> tuple[pa.Table | None, str | None]:
    """Every whole batch of one segment (with `columns`, only those of them it has), and what could not be read (its
    name and what was kept; None: nothing). None for a segment with no batch readable at all."""
    batches, problem = [], None
    first = _first["batches"] if _first is not None else None
    given = first.get(str(Path(path).resolve())) if first is not None else None
    try:
        with pa.memory_map(str(path)) as source, pa.ipc.open_stream(source) as reader:
            schema = reader.schema
            try:
                for batch in reader:
                    if given is not None and len(batches) == given:
                        break
                    batches.append(batch)
            except (pa.ArrowInvalid, OSError) as exc:
                kept = sum(b.num_rows for b in batches)
                problem = f"{path.name}: cut mid-batch after {kept:,} rows, kept ({str(exc).splitlines()[0]})"
    except (pa.ArrowInvalid, OSError) as exc:
        return None, f"{path.name}: unreadable, skipped ({str(exc).splitlines()[0]})"
    if first is not None:
        first.setdefault(str(Path(path).resolve()), len(batches))
    table = pa.Table.from_batches(batches, schema=schema)
    if columns is not None:
        table = table.select([c for c in columns if c in table.column_names])
    return table, problem


def each_segment(folder: Path, columns: list[str] | None = None) -> Iterator[tuple[pa.Table | None, str | None]]:
    """read_segment of each of the folder's segments in the order they were written, one in memory at a time (a
    reader that converts them one by one holds one segment's decompressed columns, not the folder's)."""
    for path in segments(folder):
        yield read_segment(path, columns)


def read_segments(folder: Path, columns: list[str] | None = None) -> tuple[pa.Table | None, list[str]]:
    """Every whole batch of every segment as one table (columns missing from some segments are null there; with
    `columns`, only those of them a segment has), and what could not be read: one line per cut or unreadable segment
    (its name and what was kept). None when the folder holds no segment."""
    tables, problems = [], []
    for table, problem in each_segment(folder, columns):
        problems += [problem] if problem else []
        if table is not None:
            tables.append(table)
    if not tables:
        return None, problems
    return pa.concat_tables(tables, promote_options="default"), problems
