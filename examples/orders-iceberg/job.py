"""Orders into an Apache Iceberg table, as a team writes it: read JSON orders from Kafka and append them to an
Iceberg table in a Hadoop catalog.

    python job.py --bootstrap localhost:9092 --orders orders --warehouse /data/lake --checkpoint /data/ckpt \
        --write iceberg-stream

--write says how:
  iceberg-stream  Iceberg's streaming sink (writeStream.format("iceberg")): a replayed epoch at or below the last
                  one it committed is skipped
  iceberg-append  foreachBatch appending to the table (writeTo(...).append()): a replayed batch is appended again
  iceberg-merge   foreachBatch upserting into the table by order_id (MERGE INTO): a replayed batch is updated in
                  place, in the table's --merge-mode (copy-on-write, Iceberg's default, or merge-on-read)

With --compact-every N the foreachBatch append compacts the table's small files after every N batches
(rewrite_data_files, Iceberg's SQL extensions), as a team keeps them few.

Plain PySpark with Iceberg's Spark runtime on its class path: it knows nothing of the harness that tests it.
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
WRITES = ("iceberg-stream", "iceberg-append", "iceberg-merge")
MERGE_MODES = ("copy-on-write", "merge-on-read")
UPSERT = "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
TABLE = "lake.sales.orders"
EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
COMPACT = "options => map('min-input-files', '2')"  # compact whenever two files or more are there


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True, help="Kafka bootstrap servers")
    parser.add_argument("--orders", required=True, help="the topic orders are read from")
    parser.add_argument("--warehouse", required=True, help="the Hadoop catalog's warehouse folder")
    parser.add_argument("--checkpoint", required=True, help="the query's checkpoint folder")
    parser.add_argument("--write", choices=WRITES, default="iceberg-stream")
    parser.add_argument("--compact-every", type=int, metavar="N", help="rewrite_data_files after every N batches")
    parser.add_argument("--merge-mode", choices=MERGE_MODES, default="copy-on-write", help="how MERGE changes rows")
    args = parser.parse_args()

    builder = (
        SparkSession.builder.appName("orders-to-iceberg")
        .config("spark.sql.catalog.lake", "org.apache.iceberg.spark.SparkCatalog")
        .config("spark.sql.catalog.lake.type", "hadoop")
        .config("spark.sql.catalog.lake.warehouse", args.warehouse)
        .config("spark.sql.shuffle.partitions", "2")
    )
    if args.compact_every or args.write == "iceberg-merge":  # its procedures and MERGE come with the SQL extensions
        builder = builder.config("spark.sql.extensions", EXTENSIONS)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    columns = ", ".join(f"{field.name} {field.dataType.simpleString()}" for field in ORDER.fields)
    modes = ", ".join(f"'write.{op}.mode' = '{args.merge_mode}'" for op in ("merge", "update", "delete"))
    spark.sql(f"CREATE TABLE IF NOT EXISTS {TABLE} ({columns}) USING iceberg TBLPROPERTIES ({modes})")
    orders = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("subscribe", args.orders)
        .option("startingOffsets", "earliest")
        .load()
        .select(F.from_json(F.col("value").cast("string"), ORDER).alias("order"))
        .select("order.*")
    )
    writer = orders.writeStream.option("checkpointLocation", args.checkpoint).trigger(processingTime="1 second")
    if args.write == "iceberg-stream":
        query = writer.format("iceberg").outputMode("append").toTable(TABLE)
    elif args.write == "iceberg-merge":

        def upsert(batch, batch_id: int) -> None:
            batch.dropDuplicates(["order_id"]).createOrReplaceTempView("orders_batch")
            batch.sparkSession.sql(f"MERGE INTO {TABLE} t USING orders_batch s ON t.order_id = s.order_id {UPSERT}")

        query = writer.foreachBatch(upsert).start()
    else:

        def append(batch, batch_id: int) -> None:
            batch.writeTo(TABLE).append()
            if args.compact_every and (batch_id + 1) % args.compact_every == 0:
                batch.sparkSession.sql(f"CALL lake.system.rewrite_data_files(table => 'sales.orders', {COMPACT})")

        query = writer.foreachBatch(append).start()
    query.awaitTermination()


if __name__ == "__main__":
    main()
