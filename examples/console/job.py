"""Orders to the console, as course jobs and quick checks write them: read JSON orders from Kafka and print each
micro-batch with Spark's console sink, every row of it and each value whole.

    python job.py --bootstrap localhost:9092 --orders orders --checkpoint /tmp/orders-console

Plain PySpark: it knows nothing of the harness that tests it.
"""

import argparse

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

ORDER = "order_id STRING, customer STRING, amount DOUBLE, created STRING"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True, help="Kafka bootstrap servers")
    parser.add_argument("--orders", required=True, help="the topic orders are read from")
    parser.add_argument("--checkpoint", required=True, help="the query's checkpoint folder")
    args = parser.parse_args()

    spark = SparkSession.builder.appName("orders-to-console").config("spark.sql.shuffle.partitions", "2").getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    orders = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("subscribe", args.orders)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", 5000)
        .load()
        .select(F.from_json(F.col("value").cast("string"), ORDER).alias("order"))
        .select("order.order_id", "order.customer", "order.amount")
    )
    (
        orders.writeStream.format("console")
        .option("numRows", 10000)  # above any batch (maxOffsetsPerTrigger): every row is printed
        .option("truncate", "false")
        .option("checkpointLocation", args.checkpoint)
        .trigger(processingTime="1 second")
        .start()
        .awaitTermination()
    )


if __name__ == "__main__":
    main()
