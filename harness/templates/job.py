"""A streaming job as a team writes it (replace it with yours): copy JSON events from one Kafka topic to another.

python job.py --bootstrap localhost:9092 --source events --target copied --checkpoint /tmp/checkpoint
"""

import argparse

from pyspark.sql import SparkSession


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True, help="Kafka bootstrap servers")
    parser.add_argument("--source", required=True, help="the topic read")
    parser.add_argument("--target", required=True, help="the topic written")
    parser.add_argument("--checkpoint", required=True, help="the query's checkpoint folder")
    args = parser.parse_args()
    spark = SparkSession.builder.appName("copy-events").getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("subscribe", args.source)
        .option("startingOffsets", "earliest")
        .load()
        .selectExpr("key", "value")
        .writeStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("topic", args.target)
        .option("checkpointLocation", args.checkpoint)
        .start()
        .awaitTermination()
    )


if __name__ == "__main__":
    main()
