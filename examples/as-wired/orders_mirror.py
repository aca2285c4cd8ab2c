"""Orders mirrored to a second topic from foreachBatch, with no checkpoint: Spark gives the query a temporary one
each time it starts, so a restarted job starts over, from the newest offsets (startingOffsets' default).

    python orders_mirror.py
"""

from pyspark.sql import SparkSession

BOOTSTRAP = "localhost:9092"

spark = SparkSession.builder.appName("orders-mirror").config("spark.sql.shuffle.partitions", "2").getOrCreate()
spark.sparkContext.setLogLevel("WARN")


def mirror(batch, batch_id: int) -> None:
    batch.select("key", "value").write.format("kafka").option("kafka.bootstrap.servers", BOOTSTRAP).option(
        "topic", "orders-mirror"
    ).save()


orders = (
    spark.readStream.format("kafka").option("kafka.bootstrap.servers", BOOTSTRAP).option("subscribe", "orders").load()
)
orders.writeStream.foreachBatch(mirror).trigger(processingTime="1 second").start().awaitTermination()
