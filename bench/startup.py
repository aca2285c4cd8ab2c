"""Start-up times on this machine: embedded broker(s), a Spark session with the connector.

    .venv/bin/python bench/startup.py [--repeat 3]

Prints one line per measurement; numbers, not assertions.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness.cluster import EmbeddedCluster

SPARK_PROBE = """
import time, sys
t0 = time.monotonic()
from harness.spark.session import spark_session
spark = spark_session("startup-probe")
t1 = time.monotonic()
spark.range(10).count()
t2 = time.monotonic()
spark.stop()
print(f"{t1 - t0:.2f} {t2 - t0:.2f}")
"""


def broker_start(brokers: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.monotonic()
        cluster = EmbeddedCluster.create(Path(tmp) / "c", brokers=brokers)
        with cluster:
            cluster.start()
            return time.monotonic() - t0


def spark_start() -> tuple[float, float]:
    out = subprocess.run([sys.executable, "-c", SPARK_PROBE], capture_output=True, text=True, check=True)
    session, first_job = out.stdout.split()[-2:]
    return float(session), float(first_job)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    for brokers in (1, 3):
        times = [broker_start(brokers) for _ in range(args.repeat)]
        print(f"embedded cluster, {brokers} broker(s), format+start until metadata lists all: "
              f"median {statistics.median(times):.1f}s (min {min(times):.1f}, max {max(times):.1f})")
    sessions, jobs = zip(*(spark_start() for _ in range(args.repeat)))
    print(f"SparkSession with Kafka connector (local[1]): median {statistics.median(sessions):.1f}s; "
          f"with first job: {statistics.median(jobs):.1f}s")


if __name__ == "__main__":
    main()
