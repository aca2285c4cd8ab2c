"""Order enrichment, as a team writes it: read orders from Kafka, keep those of at least 5 (in any currency), drop
the copies the upstream sends again within the watermark, add each order's amount in euros and its customer's tier,
and write the result to Kafka. With --rejected, the orders under 5 go to that topic instead of being dropped (a
dead-letter topic: one query writes both, each row naming its topic); orders without an amount are dropped.

    python job.py --bootstrap localhost:9092 --orders orders --enriched orders-enriched \
        --checkpoint /tmp/enrich-checkpoint [--rejected orders-rejected]

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
        StructField("currency", StringType()),
        StructField("created", StringType()),
    ]
)
EUR_PER = {"EUR": 1.0, "USD": 0.92, "GBP": 1.17}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True, help="Kafka bootstrap servers")
    parser.add_argument("--orders", required=True, help="the topic orders are read from")
    parser.add_argument("--enriched", required=True, help="the topic enriched orders are written to")
    parser.add_argument("--rejected", help="the topic orders under 5 are written to (default: they are dropped)")
    parser.add_argument("--checkpoint", required=True, help="the query's checkpoint folder")
    parser.add_argument("--starting-offsets", default="earliest", help="where a new query starts: earliest, latest")
    args = parser.parse_args()

    spark = SparkSession.builder.appName("enrich-orders").config("spark.sql.shuffle.partitions", "2").getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    rates = F.create_map(*[x for code, rate in EUR_PER.items() for x in (F.lit(code), F.lit(rate))])

    orders = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("subscribe", args.orders)
        .option("startingOffsets", args.starting_offsets)
        .load()
        .select(F.from_json(F.col("value").cast("string"), ORDER).alias("order"))
        .select("order.*")
        .filter(F.col("amount").isNotNull() if args.rejected else F.col("amount") >= 5)
        .withColumn("created_at", F.to_timestamp("created"))
        .withWatermark("created_at", "30 seconds")
        .dropDuplicatesWithinWatermark(["order_id"])
    )
    enriched = orders.withColumn("amount_eur", F.round(F.col("amount") * rates[F.col("currency")], 2)).withColumn(
        "tier", F.when(F.col("amount") >= 250, "gold").otherwise("standard")
    )
    topic = (
        F.when(F.col("amount") >= 5, args.enriched).otherwise(args.rejected) if args.rejected else F.lit(args.enriched)
    )
    query = (
        enriched.select(
            topic.alias("topic"),
            F.col("customer").alias("key"),
            F.to_json(F.struct("order_id", "customer", "amount", "currency", "amount_eur", "tier", "created")).alias(
                "value"
            ),
        )
        .writeStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("checkpointLocation", args.checkpoint)
        .start()
    )
    query.awaitTermination()


if __name__ == "__main__":
    main()
