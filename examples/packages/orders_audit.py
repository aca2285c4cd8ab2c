"""Orders copied to an audit topic, written as a team's job asks for its jars: in its builder's
spark.jars.packages, a Kafka connector (built for another Spark than the one it runs on) and the JDBC driver of
the PostgreSQL audit store its production run also writes to (--audit-url).

    python orders_audit.py --bootstrap localhost:9092 --orders orders --audited orders-audited \\
        --checkpoint /data/ckpt [--audit-url jdbc:postgresql://db/audit]
"""

import argparse

from pyspark.sql import SparkSession

PACKAGES = "org.apache.spark:spark-sql-kafka-0-10_2.12:3.5.1,org.postgresql:postgresql:42.7.4"

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--bootstrap", required=True)
parser.add_argument("--orders", required=True)
parser.add_argument("--audited", required=True)
parser.add_argument("--checkpoint", required=True)
parser.add_argument("--audit-url", help="the PostgreSQL audit store (JDBC); default: the topic only")
args = parser.parse_args()

spark = (
    SparkSession.builder.appName("orders-audit")
    .config("spark.jars.packages", PACKAGES)
    .config("spark.sql.shuffle.partitions", "2")
    .getOrCreate()
)
spark.sparkContext.setLogLevel("WARN")
# The JDBC driver must be there before the stream starts: a missing jar is a failed deploy, not a failed batch.
spark._jvm.org.apache.spark.util.Utils.classForName("org.postgresql.Driver", True, False)


def audit(batch, batch_id: int) -> None:
    batch.select("key", "value").write.format("kafka").option("kafka.bootstrap.servers", args.bootstrap).option(
        "topic", args.audited
    ).save()
    if args.audit_url:
        batch.selectExpr("CAST(value AS STRING) AS order_json").write.jdbc(args.audit_url, "orders_audit", "append")


orders = (
    spark.readStream.format("kafka")
    .option("kafka.bootstrap.servers", args.bootstrap)
    .option("subscribe", args.orders)
    .option("startingOffsets", "earliest")
    .load()
)
orders.writeStream.foreachBatch(audit).option("checkpointLocation", args.checkpoint).start().awaitTermination()
