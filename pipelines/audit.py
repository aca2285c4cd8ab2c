"""Where an egress records what each batch received (contract/egress.py AUDIT_COLUMNS): the audit table of its
store, or, for a run recording its evidence in columnar form (DriverPaths.egress_audit set), segments of its audit
folder, one folder per query (contract/segments.py). A replayed batch is recorded again: the checker's
re-deliveries."""

from __future__ import annotations

from itertools import repeat
from pathlib import Path
from typing import Callable

import numpy as np
import pyarrow as pa

from contract.egress import AUDIT, AUDIT_COLUMNS
from contract.segments import ARROW, SegmentWriter, identity_columns
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
        rows = len(key)
        self._writers[query].write(
            pa.table(
                {
                    "batch_id": np.full(rows, batch_id, np.int64),
                    **identity_columns(key, seq),
                    "event_time_ms": _column(event_ms, pa.int64()),
                    "batches": _column(batches, pa.string()),
                    "topic": _column(topic, pa.string()),
                    "partition": _column(partition, pa.int32()),
                    "offset": _column(offset, pa.int64()),
                    "received_ms": np.full(rows, received, np.int64),
                }
            )
        )


def _column(values, kind: pa.DataType):
    """A column of the audit's type: an Arrow column cast, a list converted."""
    return values.cast(kind) if isinstance(values, ARROW) else pa.array(values, kind)
