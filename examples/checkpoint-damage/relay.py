"""Orders relayed from one Kafka topic to another, as a team's first streaming job does: each order parsed, its
amount rounded to whole cents, written on with its id as the message key. With --distinct, copies of an order within
a 30-second watermark are dropped first (a stateful query: its state store holds the ids seen). --producer KEY=VALUE
sets the Kafka sink's producer (enable.idempotence=false, say).

    python relay.py --bootstrap localhost:9092 --orders orders --relayed orders-relayed \
        --checkpoint /data/checkpoints/relay

Plain PySpark: it knows nothing of the harness that tests it.
"""

import argparse

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, StringType, StructField, StructType

ORDER = StructType(
    [
        StructField("order_id", StringType()),
        StructField("customer", StringType()),
        StructField("amount", DoubleType()),
        StructField("created", StringType()),
    ]
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True, help="Kafka bootstrap servers")
    parser.add_argument("--orders", required=True, help="the topic orders are read from")
    parser.add_argument("--relayed", required=True, help="the topic they are written to")
    parser.add_argument("--checkpoint", required=True, help="the query's checkpoint folder")
    parser.add_argument("--distinct", action="store_true", help="drop copies of an order within 30 seconds")
    parser.add_argument(
        "--producer", action="append", default=[], metavar="KEY=VALUE", help="a setting of the Kafka sink's producer"
    )
    args = parser.parse_args()

    spark = SparkSession.builder.appName("relay").config("spark.sql.shuffle.partitions", "2").getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    orders = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("subscribe", args.orders)
        .option("startingOffsets", "earliest")
        .load()
        .select(F.from_json(F.col("value").cast("string"), ORDER).alias("o"))
        .select("o.*")
        .withColumn("amount", F.round("amount", 2))
    )
    if args.distinct:
        orders = (
            orders.withColumn("placed_at", F.to_timestamp("created"))
            .withWatermark("placed_at", "30 seconds")
            .dropDuplicatesWithinWatermark(["order_id"])
            .drop("placed_at")
        )
    (
        orders.select(F.col("order_id").alias("key"), F.to_json(F.struct("*")).alias("value"))
        .writeStream.format("kafka")
        .options(**{f"kafka.{k}": v for k, _, v in (s.partition("=") for s in args.producer)})
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("topic", args.relayed)
        .option("checkpointLocation", args.checkpoint)
        .start()
        .awaitTermination()
    )


if __name__ == "__main__":
    main()
