"""Orders into a database, as a team writes it: read JSON orders from Kafka and write each micro-batch to a table
of PostgreSQL (--db-url) or SQLite (--sqlite) through foreachBatch, upserted by order id (--mode upsert) or
appended (--mode insert).

    PGPASSWORD=... python job.py --bootstrap localhost:9092 --orders orders \
        --db-url postgresql://app@localhost/shop --table public.orders --checkpoint /tmp/orders-checkpoint
    python job.py ... --sqlite /data/shop.db --table orders ...

Plain PySpark, psycopg and sqlite3: it knows nothing of the harness that tests it.
"""

import argparse
import sqlite3

import psycopg
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
COLUMNS = ("order_id", "customer", "amount", "created")


def writer(args: argparse.Namespace):
    """The foreachBatch function: one transaction per micro-batch."""
    names = ", ".join(COLUMNS)
    marks = ", ".join(["?" if args.sqlite else "%s"] * len(COLUMNS))
    sql = f"INSERT INTO {args.table} ({names}) VALUES ({marks})"
    if args.mode == "upsert":
        updates = ", ".join(f"{c} = excluded.{c}" for c in COLUMNS[1:])
        sql += f" ON CONFLICT (order_id) DO UPDATE SET {updates}"

    def write(batch, batch_id: int) -> None:
        rows = [tuple(row[c] for c in COLUMNS) for row in batch.select(*COLUMNS).collect()]
        if not rows:
            return
        if args.sqlite:
            db = sqlite3.connect(args.sqlite, timeout=30)
            try:
                with db:  # commits, or rolls back on an error
                    db.executemany(sql, rows)
            finally:
                db.close()
        else:
            with psycopg.connect(args.db_url) as db, db.cursor() as cursor:
                cursor.executemany(sql, rows)

    return write


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True, help="Kafka bootstrap servers")
    parser.add_argument("--orders", required=True, help="the topic orders are read from")
    database = parser.add_mutually_exclusive_group(required=True)
    database.add_argument("--db-url", help="the PostgreSQL database (its password in PGPASSWORD)")
    database.add_argument("--sqlite", help="the SQLite database file")
    parser.add_argument("--table", required=True, help="the table orders are written to")
    parser.add_argument("--checkpoint", required=True, help="the query's checkpoint folder")
    parser.add_argument("--mode", choices=("upsert", "insert"), default="upsert")
    args = parser.parse_args()

    spark = SparkSession.builder.appName("orders-to-database").getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    orders = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("subscribe", args.orders)
        .option("startingOffsets", "earliest")
        .load()
        .select(F.from_json(F.col("value").cast("string"), ORDER).alias("order"))
        .select("order.*")
    )
    query = (
        orders.writeStream.foreachBatch(writer(args))
        .option("checkpointLocation", args.checkpoint)
        .trigger(processingTime="1 second")
        .start()
    )
    query.awaitTermination()


if __name__ == "__main__":
    main()
