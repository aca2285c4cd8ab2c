"""Ingress: the raw order events -> validated orders. Test orders (under a minimum amount) are dropped,
and the drop is declared, so the harness counts them as dropped by design rather than lost."""

from pyspark.sql import functions as F

from orders.schema import ORDER
from pipelines.api import Field, Outlet, Schema, Setting, Shape, Streamlet

RAW_ORDER = Schema(
    "RawOrder",
    (Field("key", "string"), Field("seq", "long"), Field("event_time_ms", "long"), Field("payload", "string")),
)


class ValidateOrders(Streamlet):
    shape = Shape(outlets=(Outlet("orders", ORDER),))
    reads_source = True
    settings = {"min_amount_cents": Setting(5, "orders below this are test orders", minimum=0)}

    def build(self, ctx):
        raw = ctx.read_source(RAW_ORDER).where(F.col("key").isNotNull() & F.col("seq").isNotNull())
        # The workload generator's events carry no amount: derive a stable one from the order number.
        orders = raw.select(
            "key",
            "seq",
            F.timestamp_millis("event_time_ms").alias("event_time"),
            ((F.col("seq") * 37) % 1000).alias("amount_cents"),
            F.lit(None).cast("string").alias("region"),
        )
        orders = ctx.drop_where(orders, F.col("amount_cents") < ctx.setting("min_amount_cents"), "test order")
        return [ctx.write(self.shape.outlets[0], orders)]
