"""Egress: orders upserted into an SQLite table keyed by (customer, order number), one transaction per batch.

The harness's evidence contract for an egress of your own: audit what each batch received through the
context (ctx.audit), and export the final state (export_state) so the checker can judge it from files.
"""

import sqlite3
from pathlib import Path

from orders.schema import ORDER
from pipelines.api import Inlet, Setting, Shape, Streamlet

UPSERT = (
    "INSERT INTO orders (customer, seq, amount_cents, region) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (customer, seq) DO UPDATE SET amount_cents = excluded.amount_cents, region = excluded.region"
)


def _database(ctx) -> Path:
    path = Path(ctx.setting("database"))
    return path if path.is_absolute() else ctx.workdir / path


class OrdersSink(Streamlet):
    shape = Shape(inlets=(Inlet("enriched", ORDER),))
    egress_evidence = "exported"
    settings = {
        "database": Setting("orders.sqlite", "the SQLite file (relative: in the streamlet's folder of the run)")
    }

    def build(self, ctx):
        database = _database(ctx)
        with sqlite3.connect(database) as db:
            db.execute(
                "CREATE TABLE IF NOT EXISTS orders (customer TEXT, seq INTEGER, amount_cents INTEGER, "
                "region TEXT, PRIMARY KEY (customer, seq))"
            )

        def write(batch, batch_id):
            ctx.audit(batch, batch_id)
            rows = batch.select("key", "seq", "amount_cents", "region").toArrow()
            with sqlite3.connect(database) as db:  # one transaction
                db.executemany(UPSERT, zip(*(column.to_pylist() for column in rows.columns)))

        return [ctx.foreach_batch(ctx.read(self.shape.inlets[0]), write, "main")]

    def export_state(self, ctx):
        with sqlite3.connect(_database(ctx)) as db:
            for customer, seq in db.execute("SELECT customer, seq FROM orders"):
                yield {"key": customer, "seq": seq}
