"""Windowed count: a stateful processor counting records per key and event-time window.

Records later than the watermark are dropped by Spark and counted in the
query progress (stateOperators[].numRowsDroppedByWatermark).
"""

from __future__ import annotations

from pyspark.sql import functions as F

from pipelines.api import SEQ_RECORD, WINDOW_COUNT, Inlet, Outlet, Setting, Shape, Streamlet


class WindowedCount(Streamlet):
    kind = "windowed-count"
    shape = Shape(inlets=(Inlet("in", SEQ_RECORD),), outlets=(Outlet("out", WINDOW_COUNT),))
    settings = {
        "window": Setting("10 seconds", "the tumbling event-time window"),
        "watermark": Setting("5 seconds", "how late a record may be and still count"),
    }
    description = "event-time windowed count per key behind a watermark (stateful)"

    @classmethod
    def drops_late_events(cls, settings: dict) -> bool:
        return True

    @classmethod
    def event_time_window(cls, settings: dict) -> str | None:
        return settings["window"]

    def build(self, ctx):
        inlet, outlet = self.shape.inlets[0], self.shape.outlets[0]
        counts = (
            ctx.read(inlet)
            .withWatermark("event_time", ctx.setting("watermark"))
            .groupBy("key", F.window("event_time", ctx.setting("window")))
            .agg(F.count(F.lit(1)).alias("count"))
            .select(
                "key", F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"), "count"
            )
        )
        return [ctx.write(outlet, counts, output_mode="append")]
