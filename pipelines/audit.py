"""Where an egress records what each batch received (contract/egress.py AUDIT_COLUMNS): the audit table of its
store, or, for a run recording its evidence in columnar form (DriverPaths.egress_audit set), segments of its audit
folder, one folder per query (contract/segments.py). A replayed batch is recorded again: the checker's
re-deliveries. And where an export writes an egress's deliveries and state after the run (ExportedEvidence), in the
same two forms."""

from __future__ import annotations

import json
from itertools import repeat
from pathlib import Path
from typing import Callable

import numpy as np
import pyarrow as pa

from contract.egress import AUDIT, AUDIT_COLUMNS, MAIN_QUERY, STATE, TABLES
from contract.segments import ARROW, SegmentWriter, identity_columns, replace_segments
from pipelines.settings import DriverPaths
from pipelines.stores import Store, now_ms


class Deliveries:
    """`folder`: the audit folder ("" -> the store's audit table); `store`: the store, opened when first needed."""

    def __init__(self, folder: str, store: Callable[[], Store]):
        self._folder = folder
        self._open_store = store
        self._store: Store | None = None
        self._writers: dict[str, SegmentWriter] = {}

    @property
    def columnar(self) -> bool:
        """Whether the deliveries go to segments: then Arrow columns are taken as they are (lists too)."""
        return bool(self._folder)

    def record(self, query: str, batch_id: int, key, seq, event_ms, batches, topic, partition, offset) -> None:
        """One batch's deliveries, a column each, lists or Arrow columns (its own transaction in a store)."""
        received = now_ms()
        if not self._folder:
            if self._store is None:
                self._store = self._open_store()
            columns = [c.to_pylist() if isinstance(c, ARROW) else c for c in (key, seq, event_ms, batches)]
            columns += [c.to_pylist() if isinstance(c, ARROW) else c for c in (topic, partition, offset)]
            with self._store.transaction() as tx:
                rows = zip(repeat(query), repeat(batch_id), *columns)
                self._store.insert(tx, AUDIT, AUDIT_COLUMNS, (row + (received,) for row in rows))
            return
        if query not in self._writers:
            self._writers[query] = SegmentWriter(Path(self._folder) / query)
        table = audit_table(batch_id, key, seq, event_ms, batches, topic, partition, offset, received)
        self._writers[query].write(table)


def audit_table(batch_id, key, seq, event_ms, batches, topic, partition, offset, received) -> pa.Table:
    """Deliveries as the audit's segments hold them: a column each (lists or Arrow columns; `batch_id` and
    `received` a value for all, or a column)."""
    rows = len(key)
    return pa.table(
        {
            "batch_id": _column(batch_id, pa.int64(), rows),
            **identity_columns(key, seq),
            "event_time_ms": _column(event_ms, pa.int64()),
            "batches": _column(batches, pa.string()),
            "topic": _column(topic, pa.string()),
            "partition": _column(partition, pa.int32()),
            "offset": _column(offset, pa.int64()),
            "received_ms": _column(received, pa.int64(), rows),
        }
    )


class ExportedEvidence:
    """Where an export (an egress of one's own, an unchanged job's output) puts an egress's evidence once the
    drivers stopped: the contract's tables (contract/egress.py TABLES) of its SQLite store, in one transaction, or,
    for a run recording its evidence in columnar form, the deliveries (the audit's main query) and the state as
    segments, each folder replaced whole (window tables, a row per window and not per record, stay in the store).
    `audit` and `records`: the two folders ("": the store)."""

    def __init__(self, store: Path, audit: str = "", records: str = ""):
        self.store, self.audit, self.records = Path(store), audit, records

    @classmethod
    def of(cls, paths: DriverPaths) -> "ExportedEvidence":
        """Where the streamlet (or output) these paths are of keeps its evidence."""
        return cls(Path(paths.egress_db), paths.egress_audit, paths.egress_records)

    def write(self, tables: dict[str, list[tuple]]) -> None:
        """Each table's rows, as tuples in its contract order; the audit's replace the main query's."""
        folders = {AUDIT: Path(self.audit) / MAIN_QUERY if self.audit else None}
        folders[STATE] = Path(self.records) if self.records else None
        for table in [t for t in tables if folders.get(t)]:
            replace_segments(folders[table], _chunks(table, tables[table]))
        in_store = {t: rows for t, rows in tables.items() if not folders.get(t)}
        if not in_store:
            return
        store = Store(sqlite_path=self.store)
        store.create_tables(upsert_key=False, only=tuple(in_store))
        with store.transaction() as tx:
            if AUDIT in in_store:
                tx.execute(f"DELETE FROM {store.table(AUDIT)} WHERE query = ?", (MAIN_QUERY,))
            for table, rows in in_store.items():
                store.insert(tx, table, TABLES[table], rows)


CHUNK_ROWS = 100_000  # rows per batch of an exported segment


def _chunks(table: str, rows: list[tuple]):
    """A contract table's rows as the segments' tables, a chunk at a time."""
    for start in range(0, len(rows), CHUNK_ROWS):
        columns = dict(zip(TABLES[table], map(list, zip(*rows[start : start + CHUNK_ROWS]))))
        if table == AUDIT:
            names = ("batch_id", "key", "seq", "event_time_ms", "batches", "topic", "kafka_partition", "kafka_offset")
            yield audit_table(*(columns[n] for n in names), columns["received_ms"])
        else:
            identity = identity_columns(columns["key"], columns["seq"])
            yield pa.table({**identity, "batch_id": _column(columns["batch_id"], pa.int64())})


def _column(values, kind: pa.DataType, rows: int | None = None):
    """A column of the evidence's type: an Arrow column cast, a list converted, or (with `rows`) a value repeated.
    A value an export gives that the type cannot hold is kept as text in a text column, else null (unknown)."""
    if isinstance(values, ARROW):
        return values.cast(kind)
    if rows is not None and not isinstance(values, (list, np.ndarray)):
        return pa.array(np.full(rows, values, np.int64), kind)
    try:
        return pa.array(values, kind)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
        if pa.types.is_string(kind):
            return pa.array([v if v is None or isinstance(v, str) else json.dumps(v, default=str) for v in values])
        bound = 1 << (kind.bit_width - 1)
        return pa.array([v if type(v) is int and -bound <= v < bound else None for v in values], kind)
