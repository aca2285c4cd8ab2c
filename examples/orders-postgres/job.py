"""Orders into PostgreSQL, as a team writes it: read JSON orders from Kafka and write each micro-batch to a table
through foreachBatch, upserted by order id (--mode upsert) or appended (--mode insert).

    PGPASSWORD=... python job.py --bootstrap localhost:9092 --orders orders \
        --db-url postgresql://app@localhost/shop --table public.orders --checkpoint /tmp/orders-checkpoint

Plain PySpark and psycopg: it knows nothing of the harness that tests it.
"""

import argparse

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


def writer(db_url: str, table: str, mode: str):
    """The foreachBatch function: one transaction per micro-batch."""
    names = ", ".join(COLUMNS)
    marks = ", ".join(["%s"] * len(COLUMNS))
    sql = f"INSERT INTO {table} ({names}) VALUES ({marks})"
    if mode == "upsert":
        updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in COLUMNS[1:])
        sql += f" ON CONFLICT (order_id) DO UPDATE SET {updates}"

    def write(batch, batch_id: int) -> None:
        rows = [tuple(row[c] for c in COLUMNS) for row in batch.select(*COLUMNS).collect()]
        if rows:
            with psycopg.connect(db_url) as db, db.cursor() as cursor:
                cursor.executemany(sql, rows)

    return write


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True, help="Kafka bootstrap servers")
    parser.add_argument("--orders", required=True, help="the topic orders are read from")
    parser.add_argument("--db-url", required=True, help="the PostgreSQL database (its password in PGPASSWORD)")
    parser.add_argument("--table", required=True, help="the table orders are written to")
    parser.add_argument("--checkpoint", required=True, help="the query's checkpoint folder")
    parser.add_argument("--mode", choices=("upsert", "insert"), default="upsert")
    args = parser.parse_args()

    spark = SparkSession.builder.appName("orders-to-postgres").getOrCreate()
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
        orders.writeStream.foreachBatch(writer(args.db_url, args.table, args.mode))
        .option("checkpointLocation", args.checkpoint)
        .trigger(processingTime="1 second")
        .start()
    )
    query.awaitTermination()


if __name__ == "__main__":
    main()
