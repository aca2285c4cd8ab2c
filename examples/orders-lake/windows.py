"""Orders counted per account and event-time window, as a team writes it: read JSON orders from Kafka, count them
per account in 10-second windows of their creation time behind a 5-second watermark, and append each window, once
the watermark has passed it, to a Parquet table partitioned by account (Spark's file sink; append is its only
output mode). With --avro SCHEMA.avsc the orders are Avro (plain binary, as Spark's to_avro writes it), else JSON.

    python windows.py --bootstrap localhost:9092 --orders orders --table /data/counts --checkpoint /data/ckpt

Plain PySpark: it knows nothing of the harness that tests it.
"""

import argparse

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.avro.functions import from_avro
from pyspark.sql.types import LongType, StringType, StructField, StructType

ORDER = StructType(
    [
        StructField("account", StringType()),
        StructField("order_no", LongType()),
        StructField("created", StringType()),
    ]
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True, help="Kafka bootstrap servers")
    parser.add_argument("--orders", required=True, help="the topic orders are read from")
    parser.add_argument("--table", required=True, help="the table's folder")
    parser.add_argument("--checkpoint", required=True, help="the query's checkpoint folder")
    parser.add_argument("--window", default="10 seconds")
    parser.add_argument("--watermark", default="5 seconds")
    parser.add_argument("--avro", help="the orders' Avro schema file (default: the orders are JSON)")
    args = parser.parse_args()

    spark = (
        SparkSession.builder.appName("orders-per-window")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("WARN")
    orders = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("subscribe", args.orders)
        .option("startingOffsets", "earliest")
        .load()
    )
    if args.avro:
        with open(args.avro) as schema:
            orders = orders.select(from_avro("value", schema.read()).alias("order"))
    else:
        orders = orders.select(F.from_json(F.col("value").cast("string"), ORDER).alias("order"))
    orders = orders.select("order.account", F.to_timestamp("order.created").alias("created"))
    counts = (
        orders.withWatermark("created", args.watermark)
        .groupBy("account", F.window("created", args.window))
        .agg(F.count(F.lit(1)).alias("orders"))
        .select("account", F.col("window.start").alias("window_start"), "orders")
    )
    query = (
        counts.writeStream.format("parquet")
        .partitionBy("account")
        .outputMode("append")
        .option("checkpointLocation", args.checkpoint)
        .trigger(processingTime="1 second")
        .start(args.table)
    )
    query.awaitTermination()


if __name__ == "__main__":
    main()
