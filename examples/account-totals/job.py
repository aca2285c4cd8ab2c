"""Running totals per account, as a team writes them: read orders from Kafka and keep, per account, how many orders
it placed, their total and the largest, written to Kafka keyed by account each time they change (update mode).

    python job.py --bootstrap localhost:9092 --orders orders --totals account-totals --checkpoint /tmp/totals

With --per-batch it does what many foreachBatch jobs do instead: each batch's orders summed per account and that part
written to the topic, a reader adding up an account's parts. A batch written again after a crash is then counted
twice into the totals; Spark's own state (the default) is not.

With --window (and --watermark) it keeps them per account and event-time window of the orders' `created` time
instead, written as they change, or with --append once each window closed.

With --db-url and --table it upserts them into a PostgreSQL table (account its primary key) instead: Spark's running
totals set as they change, or with --per-batch each batch's part added to the row (total = total + the part).

Plain PySpark: it knows nothing of the harness that tests it.
"""

import argparse

import psycopg
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, StringType, StructField, StructType

ORDER = StructType(
    [
        StructField("account", StringType()),
        StructField("order_no", StringType()),
        StructField("amount", DoubleType()),
        StructField("created", StringType()),
    ]
)


def totals(orders, window: str | None = None):
    """Per account (and event-time window): orders placed, their total, the largest."""
    keys = ["account", F.window("created_at", window)] if window else ["account"]
    return orders.groupBy(*keys).agg(
        F.count("*").alias("orders"), F.round(F.sum("amount"), 2).alias("total"), F.max("amount").alias("largest")
    )


def as_records(frame):
    columns = [c for c in ("account", "window", "orders", "total", "largest") if c in frame.columns]
    return frame.select(F.col("account").alias("key"), F.to_json(F.struct(*columns)).alias("value"))


def upsert(db_url: str, table: str, added: bool):
    """foreachBatch: the batch's values per account into the table, set (Spark's totals) or `added` to its row."""
    merged = "{0} = t.{0} + excluded.{0}" if added else "{0} = excluded.{0}"
    updates = ", ".join(merged.format(c) for c in ("orders", "total"))
    largest = "greatest(t.largest, excluded.largest)" if added else "excluded.largest"
    sql = (
        f"INSERT INTO {table} AS t (account, orders, total, largest) VALUES (%s, %s, %s, %s) "
        f"ON CONFLICT (account) DO UPDATE SET {updates}, largest = {largest}"
    )

    def write(batch, batch_id: int) -> None:
        rows = [(r.account, r.orders, r.total, r.largest) for r in (totals(batch) if added else batch).collect()]
        with psycopg.connect(db_url) as db, db.cursor() as cursor:
            cursor.executemany(sql, rows)

    return write


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True, help="Kafka bootstrap servers")
    parser.add_argument("--orders", required=True, help="the topic orders are read from")
    parser.add_argument("--totals", help="the topic each account's totals are written to")
    parser.add_argument("--db-url", help="a PostgreSQL database to upsert them into instead (its password: PGPASSWORD)")
    parser.add_argument("--table", help="the table there, account its primary key")
    parser.add_argument("--checkpoint", required=True, help="the query's checkpoint folder")
    parser.add_argument("--per-batch", action="store_true", help="write each batch's part, not Spark's running totals")
    parser.add_argument("--window", help="per event-time window of this length too, like '10 seconds'")
    parser.add_argument("--watermark", default="10 seconds", help="how late an order may come (with --window)")
    parser.add_argument("--append", action="store_true", help="write each window once it closed (with --window)")
    args = parser.parse_args()

    spark = SparkSession.builder.appName("account-totals").config("spark.sql.shuffle.partitions", "2").getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    orders = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("subscribe", args.orders)
        .option("startingOffsets", "earliest")
        .load()
        .select(F.from_json(F.col("value").cast("string"), ORDER).alias("order"))
        .select("order.*")
        .withColumn("created_at", F.to_timestamp("created"))
    )
    if args.window:
        orders = orders.withWatermark("created_at", args.watermark)
    if args.db_url:
        stream = orders if args.per_batch else totals(orders)
        writer = stream.writeStream.outputMode("append" if args.per_batch else "update").foreachBatch(
            upsert(args.db_url, args.table, args.per_batch)
        )
    elif args.per_batch:

        def write_part(batch, batch_id):
            as_records(totals(batch)).write.format("kafka").option("kafka.bootstrap.servers", args.bootstrap).option(
                "topic", args.totals
            ).save()

        writer = orders.writeStream.foreachBatch(write_part)
    else:
        writer = (
            as_records(totals(orders, args.window))
            .writeStream.outputMode("append" if args.append else "update")
            .format("kafka")
            .option("kafka.bootstrap.servers", args.bootstrap)
            .option("topic", args.totals)
        )
    writer.option("checkpointLocation", args.checkpoint).start().awaitTermination()


if __name__ == "__main__":
    main()
