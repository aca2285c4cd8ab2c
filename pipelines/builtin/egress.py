"""Egresses: records -> an external store, in one of four delivery modes, always audited.

Every mode first appends every received record, with its batch id, to the
audit table in a transaction of its own, so re-deliveries are visible even
where the state absorbs them. Then the state is written:

    append         plain insert: a re-delivered record is stored twice
    upsert         idempotent: PRIMARY KEY (key, seq), insert or update
    dedup          Spark's dropDuplicatesWithinWatermark on (key, seq), then the
                   batch's rows replace whatever an earlier attempt of the same
                   batch id wrote (a replayed batch is idempotent)
    transactional  rows and the batch id in one transaction; a batch id already
                   committed is skipped
"""

from __future__ import annotations

from itertools import repeat

from pyspark.sql import functions as F

from contract.egress import (
    COMMITTED_BATCHES,
    COMMITTED_COLUMNS,
    MAIN_QUERY,
    RECORDS,
    STATE,
    STATE_COLUMNS,
    WINDOW_AUDIT,
    WINDOW_AUDIT_COLUMNS,
    WINDOW_STATE,
    WINDOW_STATE_COLUMNS,
    WINDOWS,
)
from pipelines.api import SEQ_RECORD, WINDOW_COUNT, Inlet, Setting, Shape, Streamlet
from pipelines.audit import Deliveries
from pipelines.context import batch_columns, batch_map_json, column_lists, to_arrow
from pipelines.stores import Store, egress_store, now_ms

MODES = ("append", "upsert", "dedup", "transactional")
DEDUP_AUDIT_QUERY = "audit"  # dedup mode: the query that audits every record, before deduplication


def open_store(ctx) -> Store:
    settings = ctx.settings
    return egress_store(settings.paths, settings.store_url)


class Egress(Streamlet):
    kind = "egress"
    shape = Shape(inlets=(Inlet("in", SEQ_RECORD),))
    settings = {
        "mode": Setting("upsert", "how the state is written", choices=MODES),
        "dedup_watermark": Setting("1 hour", "dedup mode: how long a (key, seq) is remembered"),
    }
    description = "writes records to a store (append, upsert, dedup or transactional) with an audit log"
    egress_evidence = RECORDS

    @classmethod
    def drops_late_events(cls, settings: dict) -> bool:
        return settings.get("mode") == "dedup"

    @classmethod
    def audit_query(cls, settings: dict) -> str:
        return DEDUP_AUDIT_QUERY if settings.get("mode") == "dedup" else MAIN_QUERY

    def build(self, ctx):
        mode = ctx.setting("mode")
        store = open_store(ctx)
        store.create_tables(upsert_key=(mode == "upsert"))
        records = ctx.read(self.shape.inlets[0], stamps_as_text=True)
        fields = (
            F.col("key"),
            F.col("seq"),
            F.unix_millis("event_time").alias("event_time_ms"),
            F.col("payload"),
            batch_map_json(records),
            F.col("topic"),
            F.col("partition"),
            F.col("offset"),
        )

        deliveries = Deliveries(ctx.settings.paths.egress_audit, lambda: store)

        def audit(query: str, columns, batch_id: int) -> None:
            key, seq, event_ms, _, batches, topic, partition, offset = columns
            deliveries.record(query, batch_id, key, seq, event_ms, batches, topic, partition, offset)

        def state_rows(columns, batch_id: int):
            key, seq, event_ms, payload, batches, *_ = columns
            return zip(key, seq, event_ms, payload, repeat(batch_id), batches, repeat(now_ms()))

        def write_batch(batch, batch_id: int) -> None:
            table = to_arrow(batch.select(*fields))
            columns = column_lists(table)
            if ctx.settings.evidence:  # segments take the Arrow columns as they are
                audit(MAIN_QUERY, table.columns if deliveries.columnar else columns, batch_id)
            with store.transaction() as tx:
                if mode == "append":
                    store.insert(tx, STATE, STATE_COLUMNS, state_rows(columns, batch_id))
                elif mode == "upsert":
                    store.insert(
                        tx,
                        STATE,
                        STATE_COLUMNS,
                        state_rows(columns, batch_id),
                        on_conflict=(
                            "ON CONFLICT (key, seq) DO UPDATE SET payload = excluded.payload, batch_id = "
                            "excluded.batch_id, "
                            "batches = excluded.batches, written_ms = excluded.written_ms"
                        ),
                    )
                elif mode == "transactional":
                    tx.execute(f"SELECT 1 FROM {store.table(COMMITTED_BATCHES)} WHERE batch_id = ?", (batch_id,))
                    if tx.fetchone() is None:
                        store.insert(tx, STATE, STATE_COLUMNS, state_rows(columns, batch_id))
                        store.insert(tx, COMMITTED_BATCHES, COMMITTED_COLUMNS, [(batch_id, now_ms())])

        if mode != "dedup":
            return [ctx.foreach_batch(records, write_batch, MAIN_QUERY)]

        def audit_batch(batch, batch_id: int) -> None:
            table = to_arrow(batch.select(*fields))
            audit(DEDUP_AUDIT_QUERY, table.columns, batch_id)

        def dedup_batch(batch, batch_id: int) -> None:
            columns = batch_columns(batch, *fields)
            with store.transaction() as tx:
                tx.execute(f"DELETE FROM {store.table(STATE)} WHERE batch_id = ?", (batch_id,))
                store.insert(tx, STATE, STATE_COLUMNS, state_rows(columns, batch_id))

        deduplicated = records.withWatermark(
            "event_time", ctx.setting("dedup_watermark")
        ).dropDuplicatesWithinWatermark(["key", "seq"])
        return [
            ctx.foreach_batch(records, audit_batch, DEDUP_AUDIT_QUERY),
            ctx.foreach_batch(deduplicated, dedup_batch, "dedup"),
        ]


class WindowEgress(Streamlet):
    """Window counts -> the store, upsert by (key, window start), audited."""

    kind = "window-egress"
    shape = Shape(inlets=(Inlet("in", WINDOW_COUNT),))
    description = "writes window counts to a store, upsert by (key, window), with an audit log"
    egress_evidence = WINDOWS

    def build(self, ctx):
        store = open_store(ctx)
        store.create_tables(upsert_key=False)

        counts = ctx.read(self.shape.inlets[0], stamps_as_text=True)
        fields = (
            F.col("key"),
            F.unix_millis("window_start"),
            F.unix_millis("window_end"),
            F.col("count"),
            batch_map_json(counts),
            F.col("topic"),
            F.col("partition"),
            F.col("offset"),
        )

        def write_batch(batch, batch_id: int) -> None:
            columns = batch_columns(batch, *fields)
            received = now_ms()
            with store.transaction() as tx:
                store.insert(tx, WINDOW_AUDIT, WINDOW_AUDIT_COLUMNS, zip(repeat(batch_id), *columns, repeat(received)))
            key, start, end, count, *_ = columns
            with store.transaction() as tx:
                store.insert(
                    tx,
                    WINDOW_STATE,
                    WINDOW_STATE_COLUMNS,
                    zip(key, start, end, count, repeat(batch_id), repeat(received)),
                    on_conflict="ON CONFLICT (key, window_start_ms) DO UPDATE SET count = excluded.count, "
                    "batch_id = excluded.batch_id, written_ms = excluded.written_ms",
                )

        return [ctx.foreach_batch(counts, write_batch, MAIN_QUERY)]
