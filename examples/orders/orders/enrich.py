"""Enrichment: each order gets its customer's region from a static table (a stream-static join); orders of
blocked customers are dropped, declared."""

from pathlib import Path

from pyspark.sql import functions as F

from orders.schema import ORDER
from pipelines.api import Inlet, Outlet, Setting, Shape, Streamlet

CUSTOMERS = Path(__file__).with_name("customers.csv")


class EnrichOrders(Streamlet):
    shape = Shape(inlets=(Inlet("orders", ORDER),), outlets=(Outlet("enriched", ORDER),))
    settings = {"blocked_region": Setting("blocked", "orders from customers in this region are refused")}

    def build(self, ctx):
        customers = ctx.spark.read.csv(str(CUSTOMERS), header=True).select(
            F.col("customer").alias("key"), F.col("region").alias("customer_region")
        )
        orders = (
            ctx.read(self.shape.inlets[0])
            .join(F.broadcast(customers), "key", "left")
            .withColumn("region", F.coalesce("customer_region", F.lit("unknown")))
        )
        orders = ctx.drop_where(orders, F.col("region") == ctx.setting("blocked_region"), "blocked customer")
        return [ctx.write(self.shape.outlets[0], orders)]
