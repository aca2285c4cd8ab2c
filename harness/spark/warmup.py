"""The CDS training driver: one short run through what the harness's drivers do, so their classes get archived.

    python -m harness.spark.warmup BOOTSTRAP TOPIC WORKDIR JAVA_OPTIONS

Run by harness.warmup with -XX:ArchiveClassesAtExit in the driver's JVM
flags: reads the topic as a stream, decodes JSON, stamps a batch map, writes
JSON back to Kafka, collects a batch into Python, counts event-time windows
behind a watermark and drops duplicates within one, each with availableNow.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pyspark.sql import functions as F

from harness.spark.session import spark_session

RECORD_DDL = "key STRING, seq BIGINT, event_time TIMESTAMP, payload STRING"


def run(bootstrap: str, topic: str, workdir: Path, java_options: str) -> None:
    spark = spark_session("cds-warmup", conf={"spark.driver.extraJavaOptions": java_options})
    records = (
        spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
        .option("startingOffsets", "earliest").load()
        .select(F.from_json(F.col("value").cast("string"), RECORD_DDL).alias("r"), "topic", "partition", "offset")
        .select("r.*", "topic", "partition", "offset")
    )

    def relay(batch, batch_id: int) -> None:
        stamped = batch.withColumn("batches", F.map_concat(F.create_map().cast("map<string,bigint>"),
                                                           F.create_map(F.lit("warmup"), F.lit(batch_id))))
        stamped.select(F.col("key").cast("string").alias("key"), F.to_json(F.struct("key", "seq", "batches")).alias("value")) \
            .write.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("topic", f"{topic}-out").save()
        batch.collect()

    windows = (records.withWatermark("event_time", "5 seconds").groupBy("key", F.window("event_time", "10 seconds"))
               .agg(F.count(F.lit(1)).alias("count")))
    unique = records.withWatermark("event_time", "1 hour").dropDuplicatesWithinWatermark(["key", "seq"])
    queries = [
        frame.writeStream.outputMode("append").option("checkpointLocation", str(workdir / name))
        .foreachBatch(function).trigger(availableNow=True).start()
        for name, frame, function in (
            ("relay", records, relay),
            ("windows", windows, lambda batch, _: batch.collect()),
            ("unique", unique, lambda batch, _: batch.collect()),
        )
    ]
    for query in queries:
        query.awaitTermination(300)
    spark.stop()


if __name__ == "__main__":
    bootstrap_arg, topic_arg, workdir_arg, options_arg = sys.argv[1:5]
    run(bootstrap_arg, topic_arg, Path(workdir_arg), options_arg)
