"""A job given as an entry point (module:function): copies JSON records from one topic to another, unchanged."""


def run(spark, settings: dict) -> None:
    (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", settings["bootstrap"])
        .option("subscribe", settings["source"])
        .option("startingOffsets", "earliest")
        .load()
        .selectExpr("key", "value")
        .writeStream.format("kafka")
        .option("kafka.bootstrap.servers", settings["bootstrap"])
        .option("topic", settings["target"])
        .option("checkpointLocation", settings["checkpoint"])
        .start()
        .awaitTermination()
    )
