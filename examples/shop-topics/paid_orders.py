"""Paid orders, as a shop's team writes them: each order joined with its payment (a stream-stream inner join on the
order's id, the payment made within 5 seconds of the order, each stream behind a 10-second watermark), written to
Kafka with the payment's method. An order paid later, or never, has no row; with --outer (a left outer join) it has
one without a payment, written once the watermark has passed its 5 seconds.

    python paid_orders.py --bootstrap localhost:9092 --orders orders --payments payments --paid paid-orders \
        --checkpoint /data/checkpoints/paid

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
PAYMENT = StructType(
    [
        StructField("payment_id", StringType()),
        StructField("order_id", StringType()),
        StructField("method", StringType()),
        StructField("created", StringType()),
    ]
)


def stream(spark, bootstrap: str, topic: str, schema):
    return (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
        .select(F.from_json(F.col("value").cast("string"), schema).alias("v"))
        .select("v.*")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True, help="Kafka bootstrap servers")
    parser.add_argument("--orders", required=True, help="the topic orders are read from")
    parser.add_argument("--payments", required=True, help="the topic payments are read from")
    parser.add_argument("--paid", required=True, help="the topic paid orders are written to")
    parser.add_argument("--checkpoint", required=True, help="the query's checkpoint folder")
    parser.add_argument("--within", default="5 seconds", help="how soon after its order a payment counts")
    parser.add_argument("--outer", action="store_true", help="keep every order: a left outer join")
    args = parser.parse_args()

    spark = SparkSession.builder.appName("paid-orders").config("spark.sql.shuffle.partitions", "2").getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    orders = (
        stream(spark, args.bootstrap, args.orders, ORDER)
        .withColumn("placed_at", F.to_timestamp("created"))
        .withWatermark("placed_at", "10 seconds")
    )
    payments = (
        stream(spark, args.bootstrap, args.payments, PAYMENT)
        .select(
            F.col("order_id").alias("paid_order"), "payment_id", "method", F.to_timestamp("created").alias("paid_at")
        )
        .withWatermark("paid_at", "10 seconds")
    )
    paid = orders.join(
        payments,
        F.expr(f"paid_order = order_id AND paid_at >= placed_at AND paid_at <= placed_at + interval {args.within}"),
        "leftOuter" if args.outer else "inner",
    )
    (
        paid.select(
            F.col("order_id").alias("key"),
            F.to_json(F.struct("order_id", "customer", "amount", "payment_id", "method")).alias("value"),
        )
        .writeStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("topic", args.paid)
        .option("checkpointLocation", args.checkpoint)
        .start()
        .awaitTermination()
    )


if __name__ == "__main__":
    main()
