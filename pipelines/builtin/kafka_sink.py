"""A processor writing its outlet with Spark's own Kafka sink, as most pipelines do.

writeStream.format("kafka") has no foreachBatch, so its records carry no batch stamp of this streamlet and
there is no crash point: the checker still counts the copies it makes (a record's copies here beyond those
read upstream), and `kill-driver` with `at: in-flight` replays one of its batches for certain. Spark's
Structured Streaming + Kafka integration guide says it: the Kafka sink is at-least-once.
"""

from __future__ import annotations

from pyspark.sql import functions as F

from pipelines.api import SEQ_RECORD, Inlet, Outlet, Shape, Streamlet


class KafkaSinkProcessor(Streamlet):
    kind = "kafka-sink"
    shape = Shape(inlets=(Inlet("in", SEQ_RECORD),), outlets=(Outlet("out", SEQ_RECORD),))
    description = "stateless transform writing with Spark's own Kafka sink (writeStream.format('kafka')): at-least-once"

    def build(self, ctx):
        inlet, outlet = self.shape.inlets[0], self.shape.outlets[0]
        records = ctx.read(inlet).drop("topic", "partition", "offset").withColumn("payload", F.upper("payload"))
        return [ctx.write_kafka_sink(outlet, records)]
