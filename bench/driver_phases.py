"""Where a streamlet driver's start-up time goes, phase by phase (issue: restarts near a bare Spark start).

    .venv/bin/python bench/driver_phases.py [--repeat 3] [--records 2000]

Starts one embedded broker with a topic holding --records records, then runs a probe process --repeat
times. The probe starts like a driver does and prints the time (seconds from process start) at which
each phase ended:

    python       the interpreter is up (measured from the process's own start time in /proc)
    imports      pyspark and the harness imported
    jvm          the JVM launched (spark-submit) and py4j connected
    session      SparkContext and SparkSession ready, the connector's jars added
    plan         a Kafka readStream -> foreachBatch query defined and started
    first batch  its first batch committed (the connector loaded, offsets fetched, the batch planned and run)

Each repeat runs the probe twice, without and with the class-data-sharing archive that `harness jars`
trains (harness.cds). Prints the median time of each phase for both and the ratio of the totals.
Numbers, not assertions.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from kafka import KafkaProducer

from harness import cds
from harness.cluster import EmbeddedCluster
from harness.spark.session import DRIVER_ROLE, driver_classpath

PROBE = r"""
import os, sys, time
ticks_per_s = os.sysconf("SC_CLK_TCK")
with open(f"/proc/{os.getpid()}/stat") as fh:
    started_ticks = int(fh.read().rsplit(")", 1)[1].split()[19])
with open("/proc/uptime") as fh:
    uptime = float(fh.read().split()[0])
t0 = time.monotonic() - (uptime - started_ticks / ticks_per_s)  # the process's own start, on the monotonic clock
marks = {"python": time.monotonic()}
from pyspark.sql import SparkSession  # noqa: E402
from harness.spark.session import spark_session  # noqa: E402
marks["imports"] = time.monotonic()
from pyspark import SparkConf, SparkContext  # noqa: E402
from harness.spark.session import launcher_env, session_conf  # noqa: E402
launch = session_conf()  # the connector, the JVM flags, the classpath: as a driver's
os.environ.update(launcher_env())  # spark-submit's own JVM's flags, as a driver's environment has them
SparkContext._ensure_initialized(conf=SparkConf().setAll(launch.items()))  # the JVM and py4j, as getOrCreate would
marks["jvm"] = time.monotonic()
spark = spark_session("phases-probe")
marks["session"] = time.monotonic()
checkpoint, bootstrap, topic = sys.argv[1:4]
done = []
def on_batch(df, batch_id):
    df.count()
    done.append(time.monotonic())
query = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
         .option("startingOffsets", "earliest").load()
         .writeStream.foreachBatch(on_batch).option("checkpointLocation", checkpoint)
         .trigger(availableNow=True).start())
marks["plan"] = time.monotonic()
query.awaitTermination(300)
marks["first batch"] = done[0] if done else float("nan")
spark.stop()
print({k: round(v - t0, 3) for k, v in marks.items()})
"""

PHASES = ["python", "imports", "jvm", "session", "plan", "first batch"]


VARIANTS = {"without CDS": {"HARNESS_CDS": "0"}, "with CDS": {}}


def probe(bootstrap: str, topic: str, env: dict[str, str]) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(
            [sys.executable, "-c", PROBE, str(Path(tmp) / "checkpoint"), bootstrap, topic],
            capture_output=True,
            text=True,
            env={**os.environ, **env},
        )
    if out.returncode:
        raise SystemExit(
            f"probe failed: {out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode}"
        )
    marks = [line for line in out.stdout.splitlines() if line.startswith("{")]
    return json.loads(marks[-1].replace("'", '"'))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--records", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cluster = EmbeddedCluster.create(Path(tmp) / "cluster", brokers=1)
        with cluster:
            cluster.start()
            with cluster.admin() as admin:
                admin.create_topic("phases", partitions=2)
            producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all")
            for i in range(args.records):
                producer.send(
                    "phases", key=str(i % 8).encode(), value=json.dumps({"key": f"k{i % 8}", "seq": i}).encode()
                )
            producer.flush()
            producer.close()
            runs: dict[str, list[dict[str, float]]] = {name: [] for name in VARIANTS}
            for _ in range(args.repeat):  # interleaved, so both see the same machine
                for name, env in VARIANTS.items():
                    runs[name].append(probe(cluster.bootstrap_servers, "phases", env))
    if not cds.is_trained(DRIVER_ROLE, driver_classpath()):
        print("note: no CDS archive is trained here (run `harness jars`): both variants start without one")
    print(
        f"driver start-up phases, median of {args.repeat} (seconds each phase takes; {args.records} records to read):"
    )
    print(f"  {'phase':<12}" + "".join(f"{name:>14}" for name in VARIANTS))
    ends = {name: {phase: statistics.median(r[phase] for r in rs) for phase in PHASES} for name, rs in runs.items()}
    for i, phase in enumerate(PHASES):
        took = [e[phase] - (e[PHASES[i - 1]] if i else 0.0) for e in ends.values()]
        print(f"  {phase:<12}" + "".join(f"{t:13.2f}s" for t in took))
    totals = [e["first batch"] for e in ends.values()]
    print(f"  {'total':<12}" + "".join(f"{t:13.2f}s" for t in totals))
    print(f"  with CDS / without: {totals[1] / totals[0]:.2f}")


if __name__ == "__main__":
    main()
