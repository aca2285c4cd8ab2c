"""Orders into a database, as a team writes it: read JSON orders from Kafka and write each micro-batch to a table
of PostgreSQL (--db-url) or SQLite (--sqlite) through foreachBatch, upserted by order id (--mode upsert) or
appended (--mode insert). With --jdbc URL the batch goes through Spark's own JDBC writer instead (PostgreSQL's
driver on Spark's class path): appended to the table, or, to upsert, written to a staging table that one statement
then merges into it (INSERT ... ON CONFLICT, through the JVM's JDBC connection).

    PGPASSWORD=... python job.py --bootstrap localhost:9092 --orders orders \
        --db-url postgresql://app@localhost/shop --table public.orders --checkpoint /tmp/orders-checkpoint
    PGPASSWORD=... python job.py ... --jdbc "jdbc:postgresql://localhost/shop?user=app" --table public.orders ...
    python job.py ... --sqlite /data/shop.db --table orders ...

Plain PySpark, psycopg and sqlite3: it knows nothing of the harness that tests it.
"""

import argparse
import os
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

    if args.jdbc:
        return _jdbc_writer(args)

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


def _jdbc_writer(args: argparse.Namespace):
    """foreachBatch through Spark's JDBC writer: the batch appended, or staged and merged in one statement."""
    properties = {"driver": "org.postgresql.Driver", "password": os.environ.get("PGPASSWORD", "")}
    staging = f"{args.table}_staging"
    names = ", ".join(COLUMNS)
    updates = ", ".join(f"{c} = excluded.{c}" for c in COLUMNS[1:])
    merge = (
        f"INSERT INTO {args.table} ({names}) SELECT {names} FROM {staging} "
        f"ON CONFLICT (order_id) DO UPDATE SET {updates}"
    )

    def write(batch, batch_id: int) -> None:
        rows = batch.select(*COLUMNS)
        if args.mode == "insert":
            rows.write.jdbc(args.jdbc, args.table, mode="append", properties=properties)
            return
        rows.dropDuplicates(["order_id"]).write.jdbc(args.jdbc, staging, mode="overwrite", properties=properties)
        # The JDBC writer registered the driver with the JVM's DriverManager (Spark's DriverRegistry)
        jvm = batch.sparkSession.sparkContext._jvm
        connection = jvm.java.sql.DriverManager.getConnection(args.jdbc, "", properties["password"])
        try:
            connection.createStatement().executeUpdate(merge)
        finally:
            connection.close()

    return write


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True, help="Kafka bootstrap servers")
    parser.add_argument("--orders", required=True, help="the topic orders are read from")
    database = parser.add_mutually_exclusive_group(required=True)
    database.add_argument("--db-url", help="the PostgreSQL database (its password in PGPASSWORD)")
    database.add_argument("--sqlite", help="the SQLite database file")
    database.add_argument("--jdbc", help="the PostgreSQL database's JDBC URL (its password in PGPASSWORD)")
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
