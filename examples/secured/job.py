"""Orders screened on a secured Kafka cluster, as a team's job reaches one: SASL over TLS, its user and the CA's
PEM file given as arguments, the password read from its environment, every option set in the job's own code; or
TLS with a certificate of its own (mutual TLS: --security-protocol SSL --keystore-file, its key and certificate
as one PEM file).

    KAFKA_PASSWORD=... python job.py --bootstrap broker:9093 --orders orders --screened orders-screened \
        --checkpoint /data/ckpt --security-protocol SASL_SSL --sasl-mechanism SCRAM-SHA-256 \
        --username orders-app --ca-file /etc/kafka/ca.pem
    python job.py ... --security-protocol SSL --ca-file /etc/kafka/ca.pem --keystore-file /etc/kafka/client.pem

Reads JSON orders, marks each one over --review-above for review, and writes it to a second topic through
Spark's Kafka sink, with the same options. Plain PySpark: it knows nothing of the harness that tests it.
"""

import argparse
import os

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

LOGIN = {"PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule"}
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


def kafka_options(args) -> dict[str, str]:
    """The Kafka client's settings a secured cluster needs, as Spark's kafka.* options."""
    options = {
        "kafka.bootstrap.servers": args.bootstrap,
        "kafka.security.protocol": args.security_protocol,
        "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.truststore.location": args.ca_file,
    }
    if args.security_protocol.startswith("SASL_"):
        password = os.environ["KAFKA_PASSWORD"]  # never an argument: every process can read a command line
        login = LOGIN.get(args.sasl_mechanism, SCRAM)
        options["kafka.sasl.mechanism"] = args.sasl_mechanism
        options["kafka.sasl.jaas.config"] = f'{login} required username="{args.username}" password="{password}";'
    if args.keystore_file:  # the brokers ask for the client's certificate
        options.update({"kafka.ssl.keystore.type": "PEM", "kafka.ssl.keystore.location": args.keystore_file})
    return options


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--orders", required=True, help="the topic orders are read from")
    parser.add_argument("--screened", required=True, help="the topic screened orders are written to")
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--security-protocol", default="SASL_SSL")
    parser.add_argument("--sasl-mechanism", default="SCRAM-SHA-256")
    parser.add_argument("--username", help="the SASL user")
    parser.add_argument("--ca-file", required=True, help="the brokers' CA certificate (PEM)")
    parser.add_argument("--keystore-file", help="the client's key and certificate (PEM), for mutual TLS")
    parser.add_argument("--review-above", type=float, default=400.0)
    args = parser.parse_args()

    spark = SparkSession.builder.appName("screen-orders-secured").getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    options = kafka_options(args)
    orders = (
        spark.readStream.format("kafka")
        .options(**options)
        .option("subscribe", args.orders)
        .option("startingOffsets", "earliest")
        .load()
        .select("key", F.from_json(F.col("value").cast("string"), "order_id STRING, amount DOUBLE").alias("o"))
    )
    screened = orders.select(
        "key",
        F.to_json(F.struct("o.order_id", "o.amount", (F.col("o.amount") > args.review_above).alias("review"))).alias(
            "value"
        ),
    )
    (
        screened.writeStream.format("kafka")
        .options(**options)
        .option("topic", args.screened)
        .option("checkpointLocation", args.checkpoint)
        .trigger(processingTime="1 second")
        .start()
        .awaitTermination()
    )


if __name__ == "__main__":
    main()
