"""Relay: copy one Kafka topic to another with a checkpoint (the foundation demonstration), with the pipelines'
Kafka tuning: what one Spark hop costs with nothing to parse (bench/pipeline_throughput.py).

    python -m harness.spark.relay --bootstrap HOST:PORT --source IN --sink OUT --checkpoint DIR
"""

from __future__ import annotations

import argparse
import sys

from harness.spark.session import spark_session
from pipelines.context import SINK_TUNING, SOURCE_TUNING
from pipelines.runtime import run_until_stopped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--sink", required=True)
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--master", default=None)
    parser.add_argument("--trigger-seconds", type=float, default=1.0)
    args = parser.parse_args(argv)

    spark = spark_session("relay", master=args.master)
    source = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("subscribe", args.source)
        .option("startingOffsets", "earliest")
        .options(**SOURCE_TUNING)
        .load()
    )
    query = (
        source.selectExpr("key", "value")
        .writeStream.format("kafka")
        .queryName("relay")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("topic", args.sink)
        .options(**SINK_TUNING)
        .option("checkpointLocation", args.checkpoint)
        .trigger(processingTime=f"{args.trigger_seconds} seconds")
        .start()
    )
    print(f"relay started: {args.source} -> {args.sink}", flush=True)
    return run_until_stopped(spark, [query])


if __name__ == "__main__":
    sys.exit(main())
