"""What the progress listener costs a driver per batch: the harness's listener against PySpark's own.

    .venv/bin/python bench/listener_cost.py [--seconds 30] [--rounds 2] [--trigger "200 milliseconds"]

An embedded broker holds a topic with more records than the runs read. One local Spark with the drivers'
session settings (the connector on the classpath) reads it as a streamlet does, 100 records a batch, into
a foreachBatch that counts them, at a short trigger, once per variant and round:

    none      no listener
    pyspark   a pyspark.sql.streaming.StreamingQueryListener writing each progress's JSON to a file: PySpark
              converts every event into Python objects before the listener sees it
    harness   pipelines.listener.JsonLinesListener, the drivers' own: the JVM's events as they are, one call
              for a progress's JSON

Prints, per variant, the CPU (the JVM's and Python's together) per batch, and what each listener adds
over none. Numbers, not assertions.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from harness.cluster import EmbeddedCluster
from harness.demo import produce

TICKS = os.sysconf("SC_CLK_TCK")
TOPIC = "listener-cost"
PER_BATCH = 100


def cpu_s(pid: int) -> float:
    """User and system CPU of a process and its waited-for children, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11:15]) / TICKS


def pyspark_listener(path: Path):
    from pyspark.sql.streaming import StreamingQueryListener

    class Converted(StreamingQueryListener):
        def __init__(self):
            super().__init__()
            self.file = open(path, "a")

        def onQueryStarted(self, event):
            pass

        def onQueryProgress(self, event):
            self.file.write(json.dumps({"event": "progress", "progress": json.loads(event.progress.json)}) + "\n")
            self.file.flush()

        def onQueryIdle(self, event):
            pass

        def onQueryTerminated(self, event):
            pass

    return Converted()


def measure(
    spark, jvm_pid: int, listener, seconds: float, trigger: str, scratch: Path, bootstrap: str
) -> tuple[float, int]:
    """CPU seconds per batch over `seconds` of a Kafka -> foreachBatch query, and the batches it ran."""
    if listener is not None:
        spark.streams.addListener(listener)
    query = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", TOPIC)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", PER_BATCH)
        .load()
        .writeStream.foreachBatch(lambda df, batch_id: df.count())
        .trigger(processingTime=trigger)
        .option("checkpointLocation", str(scratch / f"checkpoint-{time.monotonic_ns()}"))
        .start()
    )
    while query.lastProgress is None:  # started and planned once: the first batch's cost is not the steady one
        time.sleep(0.1)
    first = query.lastProgress["batchId"]
    before = cpu_s(jvm_pid) + cpu_s(os.getpid())
    time.sleep(seconds)
    after = cpu_s(jvm_pid) + cpu_s(os.getpid())
    batches = query.lastProgress["batchId"] - first
    query.stop()
    if listener is not None:
        spark.streams.removeListener(listener)
    return (after - before) / max(batches, 1), batches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="how long each variant runs (default 30)")
    parser.add_argument("--rounds", type=int, default=2, help="how many times each variant runs (default 2)")
    parser.add_argument("--trigger", default="200 milliseconds", help="the query's processingTime trigger")
    args = parser.parse_args()

    from pyspark import SparkContext

    from harness.spark.session import spark_session
    from pipelines.listener import JsonLinesListener

    with (
        tempfile.TemporaryDirectory(prefix="listener-cost-") as tmp,
        EmbeddedCluster.create(Path(tmp) / "cluster", brokers=1) as cluster,
    ):
        scratch = Path(tmp)
        cluster.start()
        with cluster.admin() as admin:
            admin.create_topic(TOPIC, partitions=2)
        # each query reads from the start
        produce(cluster.bootstrap_servers, TOPIC, 0, int(args.seconds * 10 * PER_BATCH))
        spark = spark_session("listener-cost")
        spark.sparkContext.setLogLevel("ERROR")  # a stopped query's interrupted fetch is logged as a warning
        jvm_pid = SparkContext._gateway.proc.pid
        print(f"Spark {spark.version}, JVM pid {jvm_pid}, trigger {args.trigger}, {args.seconds:.0f} s per variant")
        variants = {
            "none": lambda: None,
            "pyspark": lambda: pyspark_listener(scratch / "pyspark.jsonl"),
            "harness": lambda: JsonLinesListener(scratch / "harness.jsonl", "bench", spark.version),
        }
        results: dict[str, list[float]] = {name: [] for name in variants}
        for round_number in range(1, args.rounds + 1):
            for name, make in variants.items():
                per_batch, batches = measure(
                    spark, jvm_pid, make(), args.seconds, args.trigger, scratch, cluster.bootstrap_servers
                )
                results[name].append(per_batch)
                print(
                    f"  round {round_number} {name:8} {per_batch * 1000:7.1f} ms CPU per batch ({batches} batches)",
                    flush=True,
                )
        spark.stop()
    median = {name: statistics.median(values) for name, values in results.items()}
    print("median CPU per batch:")
    for name, value in median.items():
        added = "" if name == "none" else f"   adds {(value - median['none']) * 1000:+.1f} ms"
        print(f"  {name:8} {value * 1000:7.1f} ms{added}")
    print(
        f"the harness's listener adds {(median['harness'] - median['none']) / (median['pyspark'] - median['none']):.2f}"
        " of what PySpark's costs"
    )


if __name__ == "__main__":
    main()
