"""Two queries in one driver, as teams write a job that lands its input twice: every order read from Kafka is
written to a Parquet table (the lake) and, enriched with its amount's band, to a Kafka topic (the audit), each
query with a checkpoint of its own under one base folder.

    python job.py --bootstrap localhost:9092 --orders orders --audit orders-audit --table /data/orders \
        --checkpoints /data/checkpoints

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
    parser.add_argument("--audit", required=True, help="the topic the enriched orders are written to")
    parser.add_argument("--table", required=True, help="the Parquet table's folder")
    parser.add_argument("--checkpoints", required=True, help="the base folder of the queries' checkpoints")
    args = parser.parse_args()

    spark = SparkSession.builder.appName("orders-twice").config("spark.sql.shuffle.partitions", "2").getOrCreate()
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
    lake = (
        orders.writeStream.format("parquet")
        .option("checkpointLocation", f"{args.checkpoints}/lake")
        .trigger(processingTime="1 second")
        .start(args.table)
    )
    band = F.when(F.col("amount") < 100, "small").when(F.col("amount") < 300, "medium").otherwise("large")
    audit = (
        orders.withColumn("band", band)
        .select(F.col("order_id").alias("key"), F.to_json(F.struct("*")).alias("value"))
        .writeStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("topic", args.audit)
        .option("checkpointLocation", f"{args.checkpoints}/audit")
        .trigger(processingTime="1 second")
        .start()
    )
    for query in (lake, audit):
        query.awaitTermination()


if __name__ == "__main__":
    main()
