"""Processor: a stateless transform, topic -> topic, that can crash its executor task.

With crash_probability p > 0, each record's Python worker exits abruptly with
probability p (os._exit, as a crashing executor would): the task fails and
Spark retries it, as Cloudflow's SuicidalMonkeyProcessor did with exceptions.
"""

from __future__ import annotations

import os
import random

from pyspark.sql import functions as F

from pipelines.api import SEQ_RECORD, Inlet, Outlet, Setting, Shape, Streamlet

CRASH_EXIT_CODE = 13


def _survive(probability: float) -> bool:
    if random.random() < probability:
        os._exit(CRASH_EXIT_CODE)
    return True


class Processor(Streamlet):
    kind = "processor"
    shape = Shape(inlets=(Inlet("in", SEQ_RECORD),), outlets=(Outlet("out", SEQ_RECORD),))
    settings = {
        "crash_probability": Setting(0.0, "chance that a record's Python worker exits abruptly", minimum=0, maximum=1)
    }
    description = "stateless transform; may crash its executor task with a given probability"
    # upper() by the JVM's case mapping, as Spark 3.5 did, not ICU's: ICU's initialisation cost a restarted processor
    # about a second of its first batch here, and the payloads are ASCII.
    spark_conf = {"spark.sql.icu.caseMappings.enabled": "false"}

    def build(self, ctx):
        inlet, outlet = self.shape.inlets[0], self.shape.outlets[0]
        records = ctx.read(inlet).drop("topic", "partition", "offset").withColumn("payload", F.upper("payload"))
        probability = float(ctx.setting("crash_probability"))
        if probability > 0:
            survive = F.udf(_survive, "boolean")
            records = records.where(survive(F.lit(probability)))
        return [ctx.write(outlet, records)]
