"""A shop's three topics read by one driver, as teams write a job that lands each feed: orders and shipments each
to a Parquet table, payments with their method's fee to a Kafka topic, each query with a checkpoint of its own
under one base folder. With --pattern, one query instead subscribes to every topic whose name matches and lands
them all, with the topic each came from, in one table.

    python job.py --bootstrap localhost:9092 --orders orders --payments payments --shipments shipments \
        --paid payments-fees --orders-table /data/orders --shipments-table /data/shipments \
        --checkpoints /data/checkpoints
    python job.py --bootstrap localhost:9092 --pattern 'shop-.*' --events-table /data/events \
        --checkpoints /data/checkpoints

Plain PySpark: it knows nothing of the harness that tests it.
"""

import argparse

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, StringType, StructField, StructType

ORDER = StructType(
    [StructField("order_id", StringType()), StructField("customer", StringType()), StructField("amount", DoubleType())]
)
PAYMENT = StructType(
    [StructField("payment_id", StringType()), StructField("method", StringType()), StructField("amount", DoubleType())]
)
SHIPMENT = StructType([StructField("shipment_id", StringType()), StructField("carrier", StringType())])
EVENT = StructType([StructField("event_id", StringType()), StructField("kind", StringType())])
FEES = {"card": 0.015, "transfer": 0.0, "wallet": 0.02}


def read(spark, bootstrap: str, **subscription):
    """A topic (subscribe=...) or every topic a pattern matches (subscribePattern=...), from its first offset."""
    reader = spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
    for option, value in subscription.items():
        reader = reader.option(option, value)
    return reader.option("startingOffsets", "earliest").load()


def values(frame, schema):
    return frame.select(F.from_json(F.col("value").cast("string"), schema).alias("v")).select("v.*")


def land(frame, table: str, checkpoint: str):
    return (
        frame.writeStream.format("parquet")
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime="1 second")
        .start(table)
    )


def three_queries(spark, args) -> list:
    orders = land(
        values(read(spark, args.bootstrap, subscribe=args.orders), ORDER),
        args.orders_table,
        f"{args.checkpoints}/orders",
    )
    shipments = land(
        values(read(spark, args.bootstrap, subscribe=args.shipments), SHIPMENT),
        args.shipments_table,
        f"{args.checkpoints}/shipments",
    )
    fee = F.lit(0.0)
    for method, share in FEES.items():
        fee = F.when(F.col("method") == method, F.round(F.col("amount") * share, 2)).otherwise(fee)
    paid = (
        values(read(spark, args.bootstrap, subscribe=args.payments), PAYMENT)
        .withColumn("fee", fee)
        .select(F.col("payment_id").alias("key"), F.to_json(F.struct("*")).alias("value"))
        .writeStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("topic", args.paid)
        .option("checkpointLocation", f"{args.checkpoints}/payments")
        .trigger(processingTime="1 second")
        .start()
    )
    return [orders, shipments, paid]


def one_pattern(spark, args) -> list:
    events = read(spark, args.bootstrap, subscribePattern=args.pattern).select(
        "topic", F.from_json(F.col("value").cast("string"), EVENT).alias("v")
    )
    return [land(events.select("topic", "v.*"), args.events_table, f"{args.checkpoints}/events")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True, help="Kafka bootstrap servers")
    parser.add_argument("--checkpoints", required=True, help="the base folder of the queries' checkpoints")
    parser.add_argument("--orders", help="the topic orders are read from")
    parser.add_argument("--payments", help="the topic payments are read from")
    parser.add_argument("--shipments", help="the topic shipments are read from")
    parser.add_argument("--paid", help="the topic payments are written to with their fee")
    parser.add_argument("--orders-table", help="the orders' Parquet table")
    parser.add_argument("--shipments-table", help="the shipments' Parquet table")
    parser.add_argument("--pattern", help="read every topic this regular expression matches, in one query")
    parser.add_argument("--events-table", help="with --pattern: the Parquet table every record lands in")
    args = parser.parse_args()

    spark = SparkSession.builder.appName("shop-topics").config("spark.sql.shuffle.partitions", "2").getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    queries = one_pattern(spark, args) if args.pattern else three_queries(spark, args)
    spark.streams.awaitAnyTermination()
    for query in queries:
        query.stop()


if __name__ == "__main__":
    main()
