"""Orders from Kafka into a Parquet table, wired the way many jobs are: the broker, the topic, the checkpoint and
the table are written in the code, and the job takes no argument.

    python orders_to_parquet.py

It reads JSON orders from the `orders` topic at localhost:9092, keeps those with an amount, and appends them to
/tmp/orders-parquet with Spark's file sink, checkpointing in chk-point-dir beside this file.
"""

from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, StringType, StructField, StructType

BOOTSTRAP = "localhost:9092"
TOPIC = "orders"
OUTPUT = "/tmp/orders-parquet"
CHECKPOINT = str(Path(__file__).parent / "chk-point-dir")

ORDER = StructType(
    [
        StructField("order_id", StringType()),
        StructField("customer", StringType()),
        StructField("amount", DoubleType()),
        StructField("created", StringType()),
    ]
)

spark = SparkSession.builder.appName("orders-to-parquet").config("spark.sql.shuffle.partitions", "2").getOrCreate()
spark.sparkContext.setLogLevel("WARN")

orders = (
    spark.readStream.format("kafka")
    .option("kafka.bootstrap.servers", BOOTSTRAP)
    .option("subscribe", TOPIC)
    .option("startingOffsets", "earliest")
    .load()
    .select(F.from_json(F.col("value").cast("string"), ORDER).alias("order"))
    .select("order.*")
    .where(F.col("amount").isNotNull())
)

query = (
    orders.writeStream.format("parquet")
    .option("path", OUTPUT)
    .option("checkpointLocation", CHECKPOINT)
    .trigger(processingTime="1 second")
    .start()
)
query.awaitTermination()
