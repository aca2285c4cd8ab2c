"""Windowed count: a stateful processor counting records per key and event-time window.

Records later than the watermark are dropped by Spark and counted in the
query progress (stateOperators[].numRowsDroppedByWatermark).
"""

from __future__ import annotations

from pyspark.sql import functions as F

from pipelines.catalog import SPECS
from pipelines.model import Streamlet


class WindowedCount(Streamlet):
    spec = SPECS["windowed-count"]

    def build(self, ctx):
        inlet, outlet = self.spec.shape.inlets[0], self.spec.shape.outlets[0]
        cfg = ctx.settings.settings
        counts = (
            ctx.read(inlet)
            .withWatermark("event_time", cfg["watermark"])
            .groupBy("key", F.window("event_time", cfg["window"]))
            .agg(F.count(F.lit(1)).alias("count"))
            .select("key", F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"), "count")
        )
        return [ctx.write(outlet, counts, output_mode="append")]
