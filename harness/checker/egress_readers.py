"""An egress's evidence read into columns: the built-in store's tables (records or windows: audit and state, from
SQLite through ADBC in blocks), the state an egress of its own exported (egress/<streamlet>.state.jsonl), or the
recording of the Kafka topic an application writes (topics/<topic>.jsonl, identities where its output says); in
columnar form, the audit's and an exported state's segments (egress/<streamlet>.audit/, egress/<streamlet>.records/)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Iterator, TypeVar

import numpy as np
import pandas as pd
import pyarrow as pa

from contract.egress import AUDIT, EXPORTED, MAIN_QUERY, RECORDS, STATE, TOPIC, WINDOW_AUDIT, WINDOW_STATE, WINDOWS
from contract.identity import IdentityReader
from harness.checker.file_readers import (
    batch_columns,
    concat,
    fill_batches,
    json_lines,
    record_frame,
    rids_of,
    segment_columns,
    stack,
)
from harness.checker.read_ahead import read_ahead
from harness.checker.record_ids import RecordIds
from harness.checker.selection import Selection, selected
from harness.checker.snapshot import database
from harness.checker.store_copies import Copying, blocks_of, copied
from harness.evidence.description import StreamletDescription
from harness.evidence.layout import RunLayout

T = TypeVar("T")
STATE_QUERY = f"SELECT key, seq, batch_id FROM {STATE}"  # the engines' too: one text, so a check reads it once
SQLITE_BATCH_ROWS = 1 << 18  # rows per block read from an egress database (the driver's default, 1024, is slow)
# Columns of an empty egress table, as loaded.
RECORD_AUDIT_DTYPES = {c: "int64" for c in ("rid", "batch_id", "partition", "offset", "received_ms", "event_time_ms")}
RECORD_STATE_DTYPES = {"rid": "int64", "batch_id": "int64"}
WINDOW_AUDIT_DTYPES = {
    c: "int64" for c in ("key", "window_start_ms", "count", "batch_id", "partition", "offset", "received_ms")
}
WINDOW_STATE_DTYPES = {c: "int64" for c in ("key", "window_start_ms", "count", "batch_id")}


@dataclass
class Egress:
    """One egress's audit log (every delivery, in arrival order) and final state."""

    name: str
    windowed: bool
    audit: pd.DataFrame  # records: rid, key, seq, batch_id, partition, offset, received_ms, event_time_ms, batches
    state: pd.DataFrame  # records: rid, key, seq, batch_id; windows: key, window_start_ms, count, batch_id
    ordered_by_partition: bool = False  # an output topic: keyed by the application, so ordered per partition


def _sqlite_batches(db: Path, sql: str):
    """The query's rows as a stream of Arrow record batches (only one batch's text columns in memory)."""
    import adbc_driver_sqlite.dbapi as adbc

    with adbc.connect(f"file:{db}?mode=ro") as conn, conn.cursor() as cursor:
        cursor.adbc_statement.set_options(**{"adbc.sqlite.query.batch_rows": str(SQLITE_BATCH_ROWS)})
        cursor.execute(sql)
        yield from cursor.fetch_record_batch()


def _sqlite_tables(db: Path, sql: str):
    """Like _sqlite_batches, but for a table whose columns do not keep one type (SQLite allows any value in
    any column, and ADBC fixes a column's type from its first rows): read with Python, odd values as text."""
    import sqlite3

    # read as a stream, its blocks may be asked for from another thread (the read-ahead's) than the one that connected
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, check_same_thread=False) as conn:
        cursor = conn.execute(sql)
        names = [d[0] for d in cursor.description]
        while rows := cursor.fetchmany(SQLITE_BATCH_ROWS):
            columns = {}
            for name, values in zip(names, zip(*rows)):
                if all(v is None or isinstance(v, int) and -(1 << 63) <= v < (1 << 63) for v in values):
                    columns[name] = pa.array(values, pa.int64())
                else:
                    columns[name] = pa.array(
                        [v if v is None or isinstance(v, str) else str(v) for v in values], pa.string()
                    )
            yield pa.table(columns)


class _MixedTypes(Exception):
    pass


def egress_blocks(
    db: Path, sql: str, convert: Callable[[pa.RecordBatch | pa.Table], T], keep: bool = True
) -> Iterator[T]:
    """A query's rows, a block at a time (one block in memory), each converted; read with Python from where ADBC
    stopped when a column does not keep one type (ADBC then raises, or turns a whole seq column into text with
    integers written as floats, or gives a type the conversion cannot take). Both read the same query, so in the
    same order. `keep`: copied for the check's later passes (store_copies.py; not for a query read once)."""
    db = database(db)  # a run still going: its store as the check first read it
    copy = copied(db, sql)
    if copy is not None:  # read whole before in this check (store_copies.py)
        for block in read_ahead(blocks_of(copy)):
            yield convert(block)
        return
    given, copying = 0, Copying(db, sql if keep else None)
    try:
        for block in read_ahead(_sqlite_batches(db, sql)):
            seq = block.schema.field("seq").type if "seq" in block.schema.names else pa.int64()
            if not (pa.types.is_integer(seq) or pa.types.is_null(seq)):
                raise _MixedTypes
            copying.add(block)
            converted = convert(block)
            yield converted
            given += block.num_rows
        copying.done()
    except Exception as exc:  # ADBC raises its own error types; a corrupt file is not a type change
        copying.drop()
        if not isinstance(exc, _MixedTypes) and "type" not in str(exc).lower():
            raise
        for table in _sqlite_tables(db, sql):
            if given < table.num_rows:
                yield convert(table.slice(given))
            given = max(given - table.num_rows, 0)
    finally:
        copying.drop()  # a reading stopped short keeps no copy (after done() there is nothing left to drop)


def egress_rows(db: Path, sql: str, convert, selection: Selection | None = None) -> list[pd.DataFrame]:
    """A query's blocks (egress_blocks), converted one at a time; with a `selection`, only its records' rows (chosen
    before the rest of a block is converted)."""
    if selection is None:
        return list(egress_blocks(db, sql, convert))
    return list(egress_blocks(db, sql, lambda block: convert(selection.rows(pa.table(block)))))


@dataclass(frozen=True)
class EgressRead:
    """What an egress evidence kind's reader is given: where the run is, which egress, the run's record ids, the
    list its gaps go to, and the records to read (None: all)."""

    layout: RunLayout
    streamlet: StreamletDescription
    ids: RecordIds
    gaps: list[str]
    selection: Selection | None = None


def _exported_state(path: Path, ids: RecordIds, gaps: list[str]) -> pd.DataFrame:
    """An egress of your own: its exported final state (JSON lines with key and seq; batch_id if given)."""
    events = json_lines(path, f"egress/{path.name}", gaps, ("key", "seq"))
    if events is None:
        raise FileNotFoundError(path)
    batch = [e.get("batch_id") for e in events]
    return pd.DataFrame(
        {
            "rid": rids_of(events, ids),
            "batch_id": np.array(
                [b if isinstance(b, int) and not isinstance(b, bool) else -1 for b in batch], np.int64
            ),
        }
    )


def _windows(read: EgressRead) -> Egress:
    """Window counts: the built-in store's window audit and window state (none with a selection: an engine judges
    the windows where they lie, harness/checker/summary/dense_windows.py)."""
    streamlet, ids = read.streamlet, read.ids
    if read.selection is not None:
        return Egress(streamlet.name, True, concat([], WINDOW_AUDIT_DTYPES), concat([], WINDOW_STATE_DTYPES))
    db = read.layout.egress_db(streamlet.name)
    audit = egress_rows(
        db,
        "SELECT key, window_start_ms, count, batch_id, kafka_partition AS partition, kafka_offset AS offset, "
        f"received_ms, batches FROM {WINDOW_AUDIT} ORDER BY rowid",
        lambda b: batch_columns(
            b.drop_columns(["batches"]).to_pandas().assign(key=ids.codes(b.column("key"))), b.column("batches")
        ),
    )
    state = egress_rows(
        db,
        f"SELECT key, window_start_ms, count, batch_id FROM {WINDOW_STATE}",
        lambda b: b.to_pandas().assign(key=ids.codes(b.column("key"))),
    )
    return Egress(
        streamlet.name,
        True,
        fill_batches(concat(audit, WINDOW_AUDIT_DTYPES)),
        fill_batches(concat(state, WINDOW_STATE_DTYPES)),
    )


def _record_audit(read: EgressRead) -> list:
    streamlet, ids, selection = read.streamlet, read.ids, read.selection
    query = streamlet.audit_query or MAIN_QUERY
    folder = read.layout.egress_audit(streamlet.name) / query
    if folder.is_dir():  # recorded in columnar form (pipelines/audit.py)

        def columns(table: pa.Table) -> dict[str, np.ndarray]:
            out = {"rid": ids.of_rows(table)}
            for name in ("batch_id", "partition", "offset", "received_ms", "event_time_ms"):
                out[name] = table[name].to_numpy()
            return batch_columns(out, table["batches"].combine_chunks())

        pieces = segment_columns(folder, columns, read.gaps, f"egress/{streamlet.name}.audit/{query}/", selection)
        return [pd.DataFrame(stack(pieces), copy=False)] if pieces else []
    return egress_rows(
        read.layout.egress_db(streamlet.name),
        "SELECT key, seq, batch_id, kafka_partition AS partition, kafka_offset AS offset, "
        f"received_ms, event_time_ms, batches FROM {AUDIT} WHERE query = '{query}' ORDER BY rowid",
        lambda b: batch_columns(record_frame(pa.table(b.drop_columns(["batches"])), ids), b.column("batches")),
        selection,
    )


def _records(read: EgressRead) -> Egress:
    """Records: the built-in store's audit and state (an output's exported state, in columnar form: segments)."""
    db, ids = read.layout.egress_db(read.streamlet.name), read.ids
    return _audited(
        read, lambda: egress_rows(db, STATE_QUERY, lambda b: record_frame(pa.table(b), ids), read.selection)
    )


def _exported(read: EgressRead) -> Egress:
    """An egress of one's own: its audit (ctx.audit) and the state it exported at the end of the run."""
    exported = read.layout.egress_state(read.streamlet.name)
    return _audited(read, lambda: [selected(read.selection, _exported_state(exported, read.ids, read.gaps))])


def _audited(read: EgressRead, stored: Callable[[], list]) -> Egress:
    """A records egress: its audit, and its state from segments where exported so, else as `stored()` reads it."""
    state = _state_segments(read)
    return _record_egress(read.streamlet, _record_audit(read), stored() if state is None else state)


def _state_segments(read: EgressRead) -> list[pd.DataFrame] | None:
    """An exported state in columnar form (pipelines/audit.py ExportedEvidence); None when it was not exported so."""
    ids = read.ids
    folder = read.layout.egress_records(read.streamlet.name)
    if not folder.is_dir():
        return None

    def columns(table: pa.Table) -> dict[str, np.ndarray]:
        return {"rid": ids.of_rows(table), "batch_id": table["batch_id"].fill_null(-1).to_numpy()}

    pieces = segment_columns(folder, columns, read.gaps, f"egress/{folder.name}/", read.selection)
    return [pd.DataFrame(stack(pieces), copy=False)] if pieces else []


def _record_egress(streamlet: StreamletDescription, audit: list, state: list) -> Egress:
    return Egress(
        streamlet.name,
        False,
        fill_batches(concat(audit, RECORD_AUDIT_DTYPES)),
        fill_batches(concat(state, RECORD_STATE_DTYPES)),
    )


def _topic(read: EgressRead) -> Egress:
    """An application's output topic, as the run recorded it: every copy is a delivery (in partition/offset order,
    received when the broker stamped it; no batch is known) and stays in the topic for its readers (the state)."""
    streamlet, ids, gaps, selection = read.streamlet, read.ids, read.gaps, read.selection
    (topic,) = streamlet.inputs
    path, folder = read.layout.topic_dump(topic), read.layout.topic_segments(topic)
    places = ("partition", "offset", "timestamp_ms")
    if folder.is_dir():  # columnar: the identity was read into key and seq as it was recorded

        def columns(table: pa.Table) -> dict[str, np.ndarray]:
            at = {c: table[c].fill_null(0).to_numpy().astype(np.int64) for c in places}
            return {"rid": ids.of_rows(table), **at}

        found = stack(segment_columns(folder, columns, gaps, f"topics/{topic}/", selection))
        rid = found.get("rid", np.array([], np.int64))
        at = {c: found.get(c, rid) for c in places}
    else:
        lines = json_lines(path, f"topics/{path.name}", gaps, ("partition", "offset"))
        if lines is None:
            raise FileNotFoundError(path)
        identity = IdentityReader(streamlet.identity or {})
        rid = rids_of([dict(zip(("key", "seq"), identity(line))) for line in lines], ids)
        at = {c: np.array([line.get(c) or 0 for line in lines], np.int64) for c in places}
    audit = pd.DataFrame(
        {
            "rid": rid,
            "batch_id": np.full(len(rid), -1, np.int64),
            "partition": at["partition"],
            "offset": at["offset"],
            "received_ms": at["timestamp_ms"],
            "event_time_ms": np.full(len(rid), -1, np.int64),
        }
    ).sort_values(["partition", "offset"], kind="stable", ignore_index=True)
    audit = selected(selection, audit)
    return replace(_record_egress(streamlet, [audit], [audit[["rid", "batch_id"]]]), ordered_by_partition=True)


# Each egress evidence kind's reader (contract/egress.py names the kinds), and the file it cannot do without.
READERS = {RECORDS: _records, WINDOWS: _windows, EXPORTED: _exported, TOPIC: _topic}


def egress(
    layout: RunLayout,
    streamlet: StreamletDescription,
    ids: RecordIds,
    gaps: list[str],
    selection: Selection | None = None,
) -> Egress:
    """An egress's evidence, read by its kind's reader (with a `selection`, only its records' rows; window counts are
    not records: all of theirs)."""
    db = layout.egress_db(streamlet.name)
    exported = layout.egress_records(streamlet.name).is_dir()  # columnar: no store needed
    if streamlet.egress_evidence != TOPIC and not db.is_file() and not exported:
        raise FileNotFoundError(db)
    return READERS[streamlet.egress_evidence](EgressRead(layout, streamlet, ids, gaps, selection))
