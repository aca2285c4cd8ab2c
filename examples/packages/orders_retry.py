"""Orders copied to a topic from foreachBatch, each batch's write retried by tenacity (the team's requirement,
in requirements.txt beside this file), as a job whose sink is sometimes slow to accept writes is written.

    pip install -r requirements.txt
    python orders_retry.py --bootstrap localhost:9092 --orders orders --copied orders-copied --checkpoint /data/ckpt
"""

import argparse

from pyspark.sql import SparkSession
from tenacity import retry, stop_after_attempt, wait_exponential

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--bootstrap", required=True)
parser.add_argument("--orders", required=True)
parser.add_argument("--copied", required=True)
parser.add_argument("--checkpoint", required=True)
args = parser.parse_args()

spark = SparkSession.builder.appName("orders-retry").config("spark.sql.shuffle.partitions", "2").getOrCreate()
spark.sparkContext.setLogLevel("WARN")


@retry(stop=stop_after_attempt(3), wait=wait_exponential(max=4), reraise=True)
def copy(batch, batch_id: int) -> None:
    batch.select("key", "value").write.format("kafka").option("kafka.bootstrap.servers", args.bootstrap).option(
        "topic", args.copied
    ).save()


orders = (
    spark.readStream.format("kafka")
    .option("kafka.bootstrap.servers", args.bootstrap)
    .option("subscribe", args.orders)
    .option("startingOffsets", "earliest")
    .load()
)
orders.writeStream.foreachBatch(copy).option("checkpointLocation", args.checkpoint).start().awaitTermination()
