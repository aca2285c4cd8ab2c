"""Start-up times on this machine: embedded broker(s) as processes and as containers, a Spark session with the
connector.

    .venv/bin/python bench/startup.py [--repeat 3] [--no-docker]

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
from harness.errors import HarnessError

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


def broker_start(brokers: int, kind=EmbeddedCluster, **options) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.monotonic()
        cluster = kind.create(Path(tmp) / "c", brokers=brokers, **options)
        try:
            cluster.start()
            return time.monotonic() - t0
        finally:
            cluster.close()


def container_kind() -> tuple[type, dict] | None:
    """The container cluster and its image, or None (and why, printed) without a Docker engine."""
    try:
        from harness.docker import engine, images
        from harness.docker.cluster import ContainerCluster

        return ContainerCluster, {"image": images.ensure_kafka(engine.client())}
    except HarnessError as exc:
        print(f"brokers in containers: not measured ({exc})")
        return None


def spark_start() -> tuple[float, float]:
    out = subprocess.run([sys.executable, "-c", SPARK_PROBE], capture_output=True, text=True, check=True)
    session, first_job = out.stdout.split()[-2:]
    return float(session), float(first_job)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-docker", action="store_true", help="Skip the brokers in containers.")
    args = parser.parse_args()
    containers = None if args.no_docker else container_kind()
    for brokers in (1, 3):
        times = [broker_start(brokers) for _ in range(args.repeat)]
        print(
            f"embedded cluster, {brokers} broker(s), format+start until metadata lists all: "
            f"median {statistics.median(times):.1f}s (min {min(times):.1f}, max {max(times):.1f})"
        )
        if containers:
            boxed = [broker_start(brokers, containers[0], **containers[1]) for _ in range(args.repeat)]
            print(
                f"the same as containers ({containers[1]['image']}): median {statistics.median(boxed):.1f}s "
                f"(min {min(boxed):.1f}, max {max(boxed):.1f}); ratio to the processes "
                f"{statistics.median(boxed) / statistics.median(times):.2f}"
            )
    sessions, jobs = zip(*(spark_start() for _ in range(args.repeat)))
    print(
        f"SparkSession with Kafka connector (local[1]): median {statistics.median(sessions):.1f}s; "
        f"with first job: {statistics.median(jobs):.1f}s"
    )


if __name__ == "__main__":
    main()
