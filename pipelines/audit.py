"""Where an egress records what each batch received (contract/egress.py AUDIT_COLUMNS): the audit table of its
store, or, for a run recording its evidence in columnar form (DriverPaths.egress_audit set), segments of its audit
folder, one folder per query (contract/segments.py). A replayed batch is recorded again: the checker's
re-deliveries. And where an export writes an egress's deliveries and state after the run (ExportedEvidence), in the
same two forms."""

from __future__ import annotations

from itertools import repeat
from pathlib import Path
from typing import Callable

from contract.egress import AUDIT, AUDIT_COLUMNS, MAIN_QUERY, STATE, TABLES
from contract.egress_segments import audit_table, segment_tables
from contract.segments import ARROW, SegmentWriter, replace_segments
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
            replace_segments(folders[table], segment_tables(table, tables[table]))
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
