"""Orders enriched with a tier, configured by settings.ini beside this file, as a team deploys it beside its
broker container (kafka:29092 on its compose network).

    python orders_enrich.py

settings.ini names the broker, the topics and the checkpoint; tiers.json (written by make_tiers.py, the deploy's
first step) the tiers. The job reads JSON orders, adds their tier and writes them to the enriched topic with
Spark's Kafka sink.
"""

import configparser
import json
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, StringType, StructField, StructType

config = configparser.ConfigParser()
config.read(Path(__file__).with_name("settings.ini"))
tiers = json.loads(Path(__file__).with_name("tiers.json").read_text())

ORDER = StructType(
    [
        StructField("order_id", StringType()),
        StructField("customer", StringType()),
        StructField("amount", DoubleType()),
        StructField("created", StringType()),
    ]
)

spark = SparkSession.builder.appName("orders-enrich").config("spark.sql.shuffle.partitions", "2").getOrCreate()
spark.sparkContext.setLogLevel("WARN")

orders = (
    spark.readStream.format("kafka")
    .option("kafka.bootstrap.servers", config["kafka"]["bootstrap"])
    .option("subscribe", config["kafka"]["orders"])
    .option("startingOffsets", "earliest")
    .load()
    .select(F.from_json(F.col("value").cast("string"), ORDER).alias("order"))
    .select("order.*")
    .withColumn(
        "tier",
        F.when(F.col("amount") >= tiers["gold"], "gold")
        .when(F.col("amount") >= tiers["silver"], "silver")
        .otherwise("standard"),
    )
)

query = (
    orders.select(F.col("customer").alias("key"), F.to_json(F.struct("*")).alias("value"))
    .writeStream.format("kafka")
    .option("kafka.bootstrap.servers", config["kafka"]["bootstrap"])
    .option("topic", config["kafka"]["enriched"])
    .option("checkpointLocation", config["paths"]["checkpoint"])
    .start()
)
query.awaitTermination()
