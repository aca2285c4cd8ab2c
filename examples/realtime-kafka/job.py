"""Payment screening, as a team writes it for low latency: read payments from Kafka, add each one's amount in euros
and a risk flag, and write them to another topic as they come, in Spark's Real-time Mode (a long batch per
checkpoint interval, records emitted as they arrive). The same job runs in micro-batch mode with --trigger
micro-batch; --deduplicate drops copies of a payment (a stateful query: Real-time Mode runs it from Spark 4.3).

    python job.py --bootstrap localhost:9092 --payments payments --screened payments-screened \
        --checkpoint /tmp/screen-checkpoint --checkpoint-interval "30 seconds"

Plain PySpark: it knows nothing of the harness that tests it.
"""

import argparse

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, StringType, StructField, StructType

PAYMENT = StructType(
    [
        StructField("payment_id", StringType()),
        StructField("account", StringType()),
        StructField("amount", DoubleType()),
        StructField("currency", StringType()),
        StructField("created", StringType()),
    ]
)
EUR_PER = {"EUR": 1.0, "USD": 0.92, "GBP": 1.17}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True, help="Kafka bootstrap servers")
    parser.add_argument("--payments", required=True, help="the topic payments are read from")
    parser.add_argument("--screened", required=True, help="the topic screened payments are written to")
    parser.add_argument("--checkpoint", required=True, help="the query's checkpoint folder")
    parser.add_argument("--trigger", choices=("real-time", "micro-batch"), default="real-time")
    parser.add_argument(
        "--checkpoint-interval", default="5 minutes", help="Real-time Mode's batch duration (default: Spark's)"
    )
    parser.add_argument("--deduplicate", action="store_true", help="drop copies of a payment (by payment_id)")
    parser.add_argument("--starting-offsets", default="earliest", help="where a new query starts: earliest, latest")
    args = parser.parse_args()

    spark = SparkSession.builder.appName("screen-payments").getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    rates = F.create_map(*[x for code, rate in EUR_PER.items() for x in (F.lit(code), F.lit(rate))])

    payments = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("subscribe", args.payments)
        .option("startingOffsets", args.starting_offsets)
        .load()
        .select(F.col("key"), F.from_json(F.col("value").cast("string"), PAYMENT).alias("p"))
        .select("key", "p.*")
    )
    if args.deduplicate:
        payments = payments.dropDuplicates(["payment_id"])
    amount_eur = F.round(F.col("amount") * rates[F.col("currency")], 2)
    screened = payments.withColumn("amount_eur", amount_eur).withColumn("review", amount_eur >= 400)
    writer = (
        screened.select(
            "key",
            F.to_json(F.struct("payment_id", "account", "amount", "amount_eur", "review", "created")).alias("value"),
        )
        .writeStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("topic", args.screened)
        .option("checkpointLocation", args.checkpoint)
        .outputMode("update")
    )
    if args.trigger == "real-time":
        writer = writer.trigger(realTime=args.checkpoint_interval)
    writer.start().awaitTermination()


if __name__ == "__main__":
    main()
