"""Ingress: the workload's source topic -> a pipeline topic, validated and keyed."""

from __future__ import annotations

from pyspark.sql import functions as F

from pipelines.api import SEQ_RECORD, SOURCE_RECORD, Outlet, Shape, Streamlet


class Ingress(Streamlet):
    kind = "ingress"
    shape = Shape(outlets=(Outlet("out", SEQ_RECORD),))
    reads_source = True
    description = "reads the workload's source topic, validates records, partitions by key"

    def build(self, ctx):
        source = ctx.read_source(SOURCE_RECORD)
        valid = source.where(
            F.col("key").isNotNull()
            & F.col("seq").isNotNull()
            & (F.col("seq") >= 0)
            & F.col("event_time_ms").isNotNull()
        )
        records = valid.select(
            "key",
            "seq",
            F.timestamp_millis("event_time_ms").alias("event_time"),
            "payload",
            *(["headers"] if "headers" in valid.columns else []),
        )
        return [ctx.write(self.shape.outlets[0], records)]
