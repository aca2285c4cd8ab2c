"""Orders with their customer's region, as a team writes it: each order joined with the customers table, a CSV file
beside the job (a stream-static inner join on the customer's name), written to Kafka. An order of a customer the
table does not know has no row.

    python job.py --bootstrap localhost:9092 --orders orders --regional orders-by-region \
        --customers customers.csv --checkpoint /tmp/regional

Plain PySpark: it knows nothing of the harness that tests it.
"""

import argparse

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, StringType, StructField, StructType

ORDER = StructType(
    [StructField("order_id", StringType()), StructField("customer", StringType()), StructField("amount", DoubleType())]
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True, help="Kafka bootstrap servers")
    parser.add_argument("--orders", required=True, help="the topic orders are read from")
    parser.add_argument("--regional", required=True, help="the topic orders with their region are written to")
    parser.add_argument("--customers", required=True, help="the customers table: a CSV file with a header")
    parser.add_argument("--checkpoint", required=True, help="the query's checkpoint folder")
    args = parser.parse_args()

    spark = SparkSession.builder.appName("orders-by-region").config("spark.sql.shuffle.partitions", "2").getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    customers = spark.read.option("header", True).csv(args.customers)
    orders = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("subscribe", args.orders)
        .option("startingOffsets", "earliest")
        .load()
        .select(F.from_json(F.col("value").cast("string"), ORDER).alias("order"))
        .select("order.*")
    )
    (
        orders.join(customers, "customer")
        .select(
            F.col("order_id").alias("key"),
            F.to_json(F.struct("order_id", "customer", "amount", "region", "tier")).alias("value"),
        )
        .writeStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("topic", args.regional)
        .option("checkpointLocation", args.checkpoint)
        .start()
        .awaitTermination()
    )


if __name__ == "__main__":
    main()
