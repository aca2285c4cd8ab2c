"""Orders copied from one Kafka topic to another on the team's Spark cluster, written for a compose stack: the
master is spark://spark-master:7077, the broker the host KAFKA_HOST names (kafka by default) on port 9092, and
every query checkpoints in a folder of its own under /opt/spark/checkpoints.

    python orders_on_cluster.py

Each order keeps its fields and gains its size band; the copies go to `orders-banded`.
"""

import os

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

KAFKA = f"{os.environ.get('KAFKA_HOST', 'kafka')}:9092"
CHECKPOINTS = "/opt/spark/checkpoints"

spark = (
    SparkSession.builder.appName("orders-on-cluster")
    .master("spark://spark-master:7077")
    .config("spark.sql.shuffle.partitions", "2")
    .getOrCreate()
)
spark.sparkContext.setLogLevel("WARN")

order = "order_id STRING, customer STRING, amount DOUBLE, created STRING"
orders = (
    spark.readStream.format("kafka")
    .option("kafka.bootstrap.servers", KAFKA)
    .option("subscribe", "orders")
    .option("startingOffsets", "earliest")
    .load()
    .select(F.col("key"), F.from_json(F.col("value").cast("string"), order).alias("order"))
)
banded = orders.select(
    "key",
    F.to_json(
        F.struct("order.*", F.when(F.col("order.amount") >= 250, "large").otherwise("small").alias("band"))
    ).alias("value"),
)

query = (
    banded.writeStream.format("kafka")
    .option("kafka.bootstrap.servers", KAFKA)
    .option("topic", "orders-banded")
    .option("checkpointLocation", f"{CHECKPOINTS}/orders-banded")
    .trigger(processingTime="1 second")
    .start()
)
query.awaitTermination()
