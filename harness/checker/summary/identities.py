"""A source's rows as the engines read them: each record's identity in one form every engine groups and compares
the same way, its place, and for the acknowledgement log what each line says.

The identity is (key, seq, seq_text), written so that two rows are one record exactly when the checker's RecordIds
give them one rid (harness/checker/record_ids.py): an ordinary record (a key, a seq from 0 to 2**40) is (key, seq,
null); any other is named as RecordIds names it, (key, seq, null) for a whole number outside that range or a
missing key, (key, null, text) otherwise, a whole number inside the range written as text so that it stays
apart from the ordinary record it resembles.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from contract.segments import read_segment
from harness.checker.egress_readers import egress_blocks
from harness.checker.file_readers import EvidenceError, carries_header
from harness.checker.record_ids import SEQ_BITS, RecordIds
from harness.checker.summary.sources import Source

SCHEMA = pa.schema(
    [
        ("key", pa.string()),
        ("seq", pa.int64()),
        ("seq_text", pa.string()),
        ("part", pa.int64()),  # a topic's partition and offset (0 where not known)
        ("off", pa.int64()),  # an acknowledgement line's offset (-1 where it has none)
        ("pos", pa.int64()),  # the row's place in its source: folder, segment, row (the order it was written in)
        ("acked", pa.int32()),  # an acknowledgement line: 1 acked
        ("line_rank", pa.int64()),  # an acknowledgement line: a record's lowest is the line the loader keeps
        ("headless", pa.int32()),  # 1: a topic's copy without the header looked for (Source.header), else 0
    ]
)
TIMES = pa.schema(  # besides, in a timed source's rows (Source.timed)
    [
        ("time_ms", pa.int64()),  # a delivery's arrival: a topic record's timestamp, an egress audit's receipt
        ("event_ms", pa.int64()),  # the event time an acknowledgement line says, or an audit recorded (-1: none)
        ("late", pa.int32()),  # an acknowledgement line: 1 a late event
    ]
)
IDENTITY = ("key", "seq", "seq_text")
# The columns _batch reads of a segment (a segment's others, payloads among them, are dropped as soon as read)
READ = [*IDENTITY, "partition", "offset", "status", "resend", "timestamp_ms", "received_ms", "event_time_ms", "late"]
READ_HEADERS = [*READ, "headers"]  # and a topic's where a header is looked for
BATCH_ROWS = 1 << 19  # a segment's rows made into batches this many at a time
ROW_BITS, SEGMENT_BITS = 24, 20
EMPTY = pa.table({"key": pa.array([], pa.string()), "seq": pa.array([], pa.int64())})
ORDINARY_SEQS = 1 << SEQ_BITS


def schema_of(source: Source) -> pa.Schema:
    """The columns of a source's rows."""
    return pa.schema([*SCHEMA, *TIMES]) if source.timed else SCHEMA


def position(folder: int, segment: int, rows: np.ndarray) -> np.ndarray:
    return (np.int64(folder) << (ROW_BITS + SEGMENT_BITS)) + (np.int64(segment) << ROW_BITS) + rows


def named_identity(key, seq):
    """(seq, seq_text) of a record RecordIds calls alien, from the name it gives it."""
    if isinstance(seq, int) and key is not None and 0 <= seq < ORDINARY_SEQS:
        return None, str(seq)
    return (seq, None) if isinstance(seq, int) or seq is None else (None, seq)


def identity(table: pa.Table) -> tuple[pa.Array, pa.Array, pa.Array]:
    """key, seq, seq_text of each row of a table with key, seq (and seq_text where some seq is not an integer)."""
    key = table["key"].combine_chunks().cast(pa.string())
    seq = table["seq"].combine_chunks()
    text = table["seq_text"].combine_chunks() if "seq_text" in table.column_names else None
    if pa.types.is_integer(seq.type) and (text is None or text.null_count == len(text)):
        return key, seq.cast(pa.int64()), pa.nulls(len(key), pa.string())
    # Some seq is text: named row by row as RecordIds names them (rare: an odd record, or a phantom).
    written = seq.cast(pa.string()) if not pa.types.is_null(seq.type) else pa.nulls(len(seq), pa.string())
    if text is not None:
        written = pc.coalesce(written, text)
    keys, values = key.to_pylist(), written.to_pylist()
    seqs, texts = [], []
    for k, v in zip(keys, values):
        ordinary = k is not None and v is not None and RecordIds.ordinary_text(v)
        s, t = (int(v), None) if ordinary else named_identity(*RecordIds.alien_name(k, v))
        seqs.append(s)
        texts.append(t)
    return key, pa.array(seqs, pa.int64()), pa.array(texts, pa.string())


def identity_table(table: pa.Table) -> pa.Table:
    return pa.table(dict(zip(IDENTITY, identity(table))))


def _named(table: pa.Table) -> pa.Table:
    """`table` with its key and seq as identities (identity()), its other columns as they are."""
    others = {c: table[c] for c in table.column_names if c not in IDENTITY}
    return pa.table({**dict(zip(IDENTITY, identity(table))), **others})


def _batch(table: pa.Table, pos: np.ndarray, source: Source, named: bool = False) -> pa.RecordBatch:
    """`table`'s rows as the source's schema (`named`: its key, seq and seq_text are identities already, as
    identity() gives)."""
    key, seq, text = (table[c].combine_chunks() for c in IDENTITY) if named else identity(table)
    n = len(key)
    names = table.column_names

    def column(name: str, missing: int = 0) -> np.ndarray:
        return table[name].fill_null(0).to_numpy().astype(np.int64) if name in names else np.full(n, missing, np.int64)

    acked = np.zeros(n, np.int32)
    rank = pos
    if source.acks:
        status = table["status"]
        acked = pc.fill_null(pc.equal(status, "acked"), False).to_numpy(zero_copy_only=False)
        aborted = pc.fill_null(pc.equal(status, "aborted"), False).to_numpy(zero_copy_only=False)
        # the line the loader keeps of a record's several: an acknowledged one, not an aborted one, not a resend
        rank = (
            ((~acked).astype(np.int64) << 62)
            + (aborted.astype(np.int64) << 61)
            + ((column("resend") != 0).astype(np.int64) << 60)
            + pos
        )
        acked = acked.astype(np.int32)
    # an acknowledgement line without an offset keeps -1 there (acknowledged without one: the loader names it)
    offset = table["offset"].fill_null(-1).to_numpy().astype(np.int64) if source.acks else column("offset")
    headless = (~carries_header(table, source.header)).astype(np.int32) if source.header else np.zeros(n, np.int32)
    columns = [key, seq, text, column("partition"), offset, pos, acked, rank, headless]
    if source.timed:
        arrived = column("timestamp_ms") if "timestamp_ms" in names else column("received_ms")
        columns += [arrived, column("event_time_ms", missing=-1), column("late").astype(np.int32)]
    return pa.RecordBatch.from_arrays([pa.array(c) for c in columns], schema=schema_of(source))


def part_batches(source: Source, folder: int, segment: int, path: str) -> Iterator[pa.RecordBatch]:
    """One part of a source (Source.parts) as batches of its schema. A segment cut mid-batch gives its whole batches,
    as the loader reads it (which names the cut)."""
    if source.rows is not None:
        yield _batch(source.rows, np.arange(source.rows.num_rows, dtype=np.int64), source, named=True)
        return
    if source.db:  # named block by block (a column's type may change from one block to the next), one in memory
        given = 0
        for table in egress_blocks(Path(source.db), source.sql, lambda block: _named(pa.table(block))):
            yield _batch(table, np.arange(given, given + table.num_rows, dtype=np.int64), source, named=True)
            given += table.num_rows
        if not given:
            yield _batch(identity_table(EMPTY), np.array([], np.int64), source, named=True)
        return
    table, _ = read_segment(Path(path), READ_HEADERS if source.header else READ)
    if table is None:
        return
    if table.num_rows >= 1 << ROW_BITS:
        raise EvidenceError(f"{path}: more than {1 << ROW_BITS:,} rows in one segment: the engines cannot place them")
    for start in range(0, max(table.num_rows, 1), BATCH_ROWS):
        rows = table.slice(start, BATCH_ROWS)
        yield _batch(rows, position(folder, segment, np.arange(start, start + rows.num_rows, dtype=np.int64)), source)


def source_batches(source: Source) -> Iterator[pa.RecordBatch]:
    for folder, segment, path in source.parts():
        yield from part_batches(source, folder, segment, path)
