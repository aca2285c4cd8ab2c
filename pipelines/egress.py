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

import json
from pathlib import Path

from pipelines.catalog import SPECS
from pipelines.model import Streamlet
from pipelines.stores import (
    AUDIT_COLUMNS, RECORD_COLUMNS, WINDOW_AUDIT_COLUMNS, WINDOW_COLUMNS, Store, egress_store, now_ms,
)


def open_store(ctx) -> Store:
    settings = ctx.settings
    return egress_store(Path(settings.run_dir), settings.name, settings.store_url)


def _ms(ts) -> int | None:
    return None if ts is None else int(ts.timestamp() * 1000)


def _batches(value) -> str:
    return json.dumps(dict(value or {}), sort_keys=True)


class Egress(Streamlet):
    spec = SPECS["egress"]

    def build(self, ctx):
        mode = ctx.settings.settings["mode"]
        store = open_store(ctx)
        store.create_tables(upsert_key=(mode == "upsert"))
        records = ctx.read(self.spec.shape.inlets[0])

        def audit(tx, query: str, rows, batch_id: int) -> None:
            received = now_ms()
            store.insert(tx, "audit", AUDIT_COLUMNS, [
                (query, batch_id, r.key, r.seq, _ms(r.event_time), _batches(r.batches), r.topic, r.partition, r.offset, received)
                for r in rows
            ])

        def state_rows(rows, batch_id: int) -> list[tuple]:
            written = now_ms()
            return [(r.key, r.seq, _ms(r.event_time), r.payload, batch_id, _batches(r.batches), written) for r in rows]

        def write_batch(batch, batch_id: int) -> None:
            rows = batch.collect()
            with store.transaction() as tx:
                audit(tx, "main", rows, batch_id)
            with store.transaction() as tx:
                if mode == "append":
                    store.insert(tx, "records", RECORD_COLUMNS, state_rows(rows, batch_id))
                elif mode == "upsert":
                    store.insert(tx, "records", RECORD_COLUMNS, state_rows(rows, batch_id), on_conflict=(
                        "ON CONFLICT (key, seq) DO UPDATE SET payload = excluded.payload, batch_id = excluded.batch_id, "
                        "batches = excluded.batches, written_ms = excluded.written_ms"))
                elif mode == "transactional":
                    tx.execute(f"SELECT 1 FROM {store.table('committed_batches')} WHERE batch_id = ?", (batch_id,))
                    if tx.fetchone() is None:
                        store.insert(tx, "records", RECORD_COLUMNS, state_rows(rows, batch_id))
                        store.insert(tx, "committed_batches", ("batch_id", "committed_ms"), [(batch_id, now_ms())])

        if mode != "dedup":
            return [ctx.foreach_batch(records, write_batch, "main")]

        def audit_batch(batch, batch_id: int) -> None:
            with store.transaction() as tx:
                audit(tx, "audit", batch.collect(), batch_id)

        def dedup_batch(batch, batch_id: int) -> None:
            rows = batch.collect()
            with store.transaction() as tx:
                tx.execute(f"DELETE FROM {store.table('records')} WHERE batch_id = ?", (batch_id,))
                store.insert(tx, "records", RECORD_COLUMNS, state_rows(rows, batch_id))

        deduplicated = records.withWatermark("event_time", ctx.settings.settings["dedup_watermark"]).dropDuplicatesWithinWatermark(["key", "seq"])
        return [ctx.foreach_batch(records, audit_batch, "audit"), ctx.foreach_batch(deduplicated, dedup_batch, "dedup")]


class WindowEgress(Streamlet):
    """Window counts -> the store, upsert by (key, window start), audited."""

    spec = SPECS["window-egress"]

    def build(self, ctx):
        store = open_store(ctx)
        store.create_tables(upsert_key=False)

        def write_batch(batch, batch_id: int) -> None:
            rows = batch.collect()
            received = now_ms()
            with store.transaction() as tx:
                store.insert(tx, "window_audit", WINDOW_AUDIT_COLUMNS, [
                    (batch_id, r.key, _ms(r.window_start), _ms(r.window_end), r["count"], _batches(r.batches),
                     r.topic, r.partition, r.offset, received) for r in rows
                ])
            with store.transaction() as tx:
                store.insert(tx, "windows", WINDOW_COLUMNS, [
                    (r.key, _ms(r.window_start), _ms(r.window_end), r["count"], batch_id, received) for r in rows
                ], on_conflict="ON CONFLICT (key, window_start_ms) DO UPDATE SET count = excluded.count, "
                               "batch_id = excluded.batch_id, written_ms = excluded.written_ms")

        return [ctx.foreach_batch(ctx.read(self.spec.shape.inlets[0]), write_batch, "main")]
