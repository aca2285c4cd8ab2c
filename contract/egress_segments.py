"""The egress evidence's columnar form (contract/segments.py): the tables of an egress's audit segments
(egress/<streamlet>.audit/<query>/: one row per delivery) and of its exported state (egress/<streamlet>.records/: one
row per record kept), whoever writes them: an egress as it runs, an export after the run, `harness compact`."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

from contract.egress import AUDIT, TABLES
from contract.segments import ARROW, identity_columns


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


CHUNK_ROWS = 100_000  # rows per batch of an exported segment


def segment_tables(table: str, rows: list[tuple]):
    """A contract table's rows (tuples in its contract order: the audit's, or the state's) as its segments'
    tables, a chunk at a time."""
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
