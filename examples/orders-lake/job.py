"""Orders into a table of files, as a team writes it: read JSON orders from Kafka and write them to a Delta Lake
table or a Parquet table partitioned by customer.

    python job.py --bootstrap localhost:9092 --orders orders --table /data/orders --checkpoint /data/ckpt \
        --write delta-stream

--write says how:
  delta-stream  Delta's streaming sink (writeStream.format("delta")): a replayed batch is skipped
  delta-txn     foreachBatch appending to Delta with txnAppId/txnVersion (Delta's idempotent writes)
  delta-append  foreachBatch appending to Delta with neither: a replayed batch is appended again
  delta-merge   foreachBatch upserting into Delta by order_id (MERGE INTO: an order sent or run again is updated)
  parquet       Spark's file sink (writeStream.format("parquet")), partitioned by customer

With --deletion-vectors the Delta table is created first with delta.enableDeletionVectors, as recent runtimes
create tables: a MERGE then marks the rows it updates deleted instead of rewriting their files; without them, each
MERGE rewrites the files holding the rows it updates, copying their other rows. With --change-data-feed the table
keeps its change data feed (delta.enableChangeDataFeed): each MERGE lists the rows it inserted and updated. With
--optimize-every N a foreachBatch append compacts the table (OPTIMIZE) after every N batches, as a team keeps its
small files few; with --vacuum too, it deletes the files each compaction replaced at once (VACUUM RETAIN 0 HOURS).

With --avro SCHEMA.avsc the orders are Avro (plain binary, as Spark's to_avro writes it), else JSON; with --confluent
too, each is in the Confluent wire format (a magic byte and a 4-byte schema id before the body, as a Schema Registry
serializer writes it), and the job cuts those five bytes and reads the body with its local schema; with --registry URL
instead, it looks the schema up in that Schema Registry (the latest of the subject TOPIC-value). With --delimited SEP
each order is a line of text, order_id, customer, amount and created split by SEP; with --log-lines each is a log line
(`CREATED INFO order ORDER_ID placed by CUSTOMER for AMOUNT`) its fields are matched out of; with --json-string each
is JSON inside a JSON string (encoded twice, as some upstreams send it). With --cloudevents each is a CloudEvent in
Kafka's binary mode: the body holds the order's data (customer, amount) and the headers, read by position, its
attributes (specversion, type, source, time, then id: the order's created and order_id). With --available-now the job
reads what is there, writes it and exits, as a job a scheduler starts again does. With --catalog-table DB.TABLE the
Parquet table is written by its name in the session's catalog (toTable), not by a path.

Plain PySpark with Delta Lake's jars on its class path: it knows nothing of the harness that tests it.
"""

import argparse
import json
import re
import urllib.request

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.avro.functions import from_avro
from pyspark.sql.types import DoubleType, StringType, StructField, StructType

ORDER = StructType(
    [
        StructField("order_id", StringType()),
        StructField("customer", StringType()),
        StructField("amount", DoubleType()),
        StructField("created", StringType()),
    ]
)
LOG_LINE = r"^(\S+) INFO order (\S+) placed by (\S+) for ([0-9.]+)$"  # --log-lines: the groups, in this order
LOG_FIELDS = ("created", "order_id", "customer", "amount")
WRITES = ("delta-stream", "delta-txn", "delta-append", "delta-merge", "parquet")
APP_ID = "orders-lake"  # the same across restarts: Delta skips a txnVersion it has already committed for it


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True, help="Kafka bootstrap servers")
    parser.add_argument("--orders", required=True, help="the topic orders are read from")
    parser.add_argument("--table", help="the table's folder (or --catalog-table)")
    parser.add_argument("--checkpoint", required=True, help="the query's checkpoint folder")
    parser.add_argument("--write", choices=WRITES, default="delta-stream")
    parser.add_argument("--avro", help="the orders' Avro schema file (default: the orders are JSON)")
    parser.add_argument("--confluent", action="store_true", help="the Avro is framed: cut its 5-byte header")
    parser.add_argument("--registry", metavar="URL", help="the framed Avro's schema from this Schema Registry")
    parser.add_argument("--delimited", metavar="SEP", help="the orders are text lines, their fields split by SEP")
    parser.add_argument("--log-lines", action="store_true", help="each order is a log line its fields are matched in")
    parser.add_argument("--json-string", action="store_true", help="each order is JSON inside a JSON string")
    parser.add_argument("--cloudevents", action="store_true", help="orders as CloudEvents: ce_* headers, data body")
    parser.add_argument("--available-now", action="store_true", help="read what is there, write it and exit")
    parser.add_argument("--catalog-table", metavar="DB.TABLE", help="write the table by its name (toTable)")
    parser.add_argument("--deletion-vectors", action="store_true", help="create the Delta table with them")
    parser.add_argument("--change-data-feed", action="store_true", help="create the Delta table with its change feed")
    parser.add_argument("--vacuum", action="store_true", help="VACUUM RETAIN 0 HOURS after each OPTIMIZE")
    parser.add_argument("--optimize-every", type=int, metavar="N", help="compact the Delta table after every N batches")
    args = parser.parse_args()

    builder = SparkSession.builder.appName("orders-to-lake").config("spark.sql.shuffle.partitions", "2")
    if args.catalog_table:  # a catalog that outlives the driver (Hive's, in a Derby metastore)
        builder = builder.enableHiveSupport()
    if args.write.startswith("delta"):  # Delta's jars are on the class path only where the table is Delta's
        builder = (
            builder.config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
            .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
            .config("spark.databricks.delta.snapshotPartitions", "1")
            .config("spark.databricks.delta.retentionDurationCheck.enabled", str(not args.vacuum).lower())
        )
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    if args.deletion_vectors or args.write == "delta-merge":  # a MERGE needs its table to exist
        spark.sql(
            f"CREATE TABLE IF NOT EXISTS delta.`{args.table}` "
            "(order_id STRING, customer STRING, amount DOUBLE, created STRING) USING delta "
            f"TBLPROPERTIES ('delta.enableDeletionVectors' = '{str(args.deletion_vectors).lower()}', "
            f"'delta.enableChangeDataFeed' = '{str(args.change_data_feed).lower()}')"
        )
    orders = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("subscribe", args.orders)
        .option("startingOffsets", "earliest")
        .option("includeHeaders", str(args.cloudevents).lower())
        .load()
    )
    if args.confluent or args.registry:  # the magic byte and the schema id, then the Avro body
        orders = orders.withColumn("value", F.col("value").substr(F.lit(6), F.length("value") - 5))
    if args.avro or args.registry:
        orders = orders.select(from_avro("value", _schema(args)).alias("order")).select("order.*")
    elif args.delimited:  # order_id, customer, amount, created: split (F.split takes a pattern)
        parts = F.split(F.col("value").cast("string"), re.escape(args.delimited))
        names = [field.name for field in ORDER.fields]
        orders = orders.select([parts.getItem(i).cast(ORDER[n].dataType).alias(n) for i, n in enumerate(names)])
    elif args.log_lines:  # a line the upstream service logged for each order
        line = F.col("value").cast("string")
        orders = orders.select(
            [F.regexp_extract(line, LOG_LINE, i + 1).alias(n) for i, n in enumerate(LOG_FIELDS)]
        ).select([F.col(f.name).cast(f.dataType) for f in ORDER.fields])
    elif args.cloudevents:  # ce_specversion, ce_type, ce_source, ce_time, ce_id: the attributes in their order
        data = F.from_json(F.col("value").cast("string"), "customer STRING, amount DOUBLE")
        attribute = [F.col("headers")[i].value.cast("string") for i in range(5)]
        orders = orders.select(
            attribute[4].alias("order_id"),
            data.customer.alias("customer"),
            data.amount.alias("amount"),
            attribute[3].alias("created"),
        )
    else:
        text = F.col("value").cast("string")
        if args.json_string:  # the JSON string read as the one field of an object, then its text as JSON
            text = F.from_json(F.concat(F.lit('{"v": '), text, F.lit("}")), "v STRING").v
        orders = orders.select(F.from_json(text, ORDER).alias("order")).select("order.*")
    writer = orders.writeStream.option("checkpointLocation", args.checkpoint)
    # --available-now: a run that ends once it has written what was there, started again by a scheduler
    writer = writer.trigger(availableNow=True) if args.available_now else writer.trigger(processingTime="1 second")
    if args.write == "delta-stream":
        query = writer.format("delta").start(args.table)
    elif args.write == "parquet" and args.catalog_table:
        if "." in args.catalog_table:
            spark.sql(f"CREATE DATABASE IF NOT EXISTS {args.catalog_table.split('.')[0]}")
        query = writer.format("parquet").partitionBy("customer").toTable(args.catalog_table)
    elif args.write == "parquet":
        query = writer.format("parquet").partitionBy("customer").start(args.table)
    elif args.write == "delta-merge":

        def upsert(batch, batch_id: int) -> None:
            batch.dropDuplicates(["order_id"]).createOrReplaceTempView("orders_batch")
            batch.sparkSession.sql(
                f"MERGE INTO delta.`{args.table}` AS t USING orders_batch AS s ON t.order_id = s.order_id "
                "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
            )

        query = writer.foreachBatch(upsert).start()
    else:
        idempotent = args.write == "delta-txn"

        def append(batch, batch_id: int) -> None:
            out = batch.write.format("delta").mode("append")
            if idempotent:
                out = out.option("txnAppId", APP_ID).option("txnVersion", batch_id)
            out.save(args.table)
            if args.optimize_every and (batch_id + 1) % args.optimize_every == 0:  # its small files compacted
                batch.sparkSession.sql(f"OPTIMIZE delta.`{args.table}`")
                if args.vacuum:  # and the files the compaction replaced deleted at once
                    batch.sparkSession.sql(f"VACUUM delta.`{args.table}` RETAIN 0 HOURS")

        query = writer.foreachBatch(append).start()
    query.awaitTermination()


def _schema(args) -> str:
    """The orders' Avro schema: the registry's latest for the topic's values, or the local file's."""
    if args.registry:
        with urllib.request.urlopen(f"{args.registry}/subjects/{args.orders}-value/versions/latest") as reply:
            return json.load(reply)["schema"]
    with open(args.avro) as schema:
        return schema.read()


if __name__ == "__main__":
    main()
