"""How often a graceful stop (SIGTERM) leaves a batch planned but not committed, under a steady flow.

    .venv/bin/python bench/sigterm_stops.py [--stops 6] [--trigger-seconds 1] [--rate 1000]

A relay query (Kafka -> Kafka) reads a topic fed continuously; it is stopped
with SIGTERM a few batches after each start and restarted on the same
checkpoint. After each stop, the newest batch in offsets/ without its entry in
commits/ is a batch the restart replays. Prints one line per stop and the
count; numbers, not assertions.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from pathlib import Path

from kafka import KafkaProducer

from harness.cluster import EmbeddedCluster, KafkaAdmin
from harness.evidence.checkpoint import committed_batches, planned_batches
from harness.process import Supervisor
from harness.spark.launcher import launch_driver
from harness.waiting import wait_for


def feed(bootstrap: str, topic: str, rate: int, stop: threading.Event) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    try:
        n = 0
        while not stop.is_set():
            for _ in range(rate // 20):
                producer.send(topic, value=str(n).encode())
                n += 1
            time.sleep(0.05)
    finally:
        producer.close()


def newest(batches: list[int]) -> int:
    return batches[-1] if batches else -1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stops", type=int, default=6)
    parser.add_argument("--trigger-seconds", type=float, default=1.0)
    parser.add_argument("--rate", type=int, default=1000, help="records per second fed to the source")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        checkpoint = workdir / "checkpoint"
        with EmbeddedCluster.create(workdir / "cluster", brokers=1) as cluster:
            cluster.start()
            bootstrap = cluster.bootstrap_servers
            with KafkaAdmin(bootstrap) as admin:
                admin.create_topic("in", partitions=2)
                admin.create_topic("out", partitions=2)
            stop_feeding = threading.Event()
            feeder = threading.Thread(target=feed, args=(bootstrap, "in", args.rate, stop_feeding))
            feeder.start()
            supervisor = Supervisor(workdir / "pids")
            uncommitted = 0
            try:
                for i in range(args.stops):
                    driver = launch_driver(
                        supervisor,
                        "relay",
                        "harness.spark.relay",
                        [
                            "--bootstrap",
                            bootstrap,
                            "--source",
                            "in",
                            "--sink",
                            "out",
                            "--checkpoint",
                            str(checkpoint),
                            "--trigger-seconds",
                            str(args.trigger_seconds),
                        ],
                        workdir / "logs" / f"relay-{i}.log",
                    )
                    start = newest(committed_batches(checkpoint))
                    wait_for(
                        lambda: newest(committed_batches(checkpoint)) >= start + 3,
                        timeout=300,
                        what="three committed batches",
                    )
                    t0 = time.monotonic()
                    code = driver.stop(timeout=60)
                    planned, committed = newest(planned_batches(checkpoint)), newest(committed_batches(checkpoint))
                    uncommitted += planned != committed
                    print(
                        f"stop {i + 1}: exit {code} after {time.monotonic() - t0:.1f}s, "
                        f"newest planned batch {planned}, newest committed {committed}",
                        flush=True,
                    )
            finally:
                stop_feeding.set()
                feeder.join()
                supervisor.stop_all()
    print(
        f"{uncommitted} of {args.stops} stops left a batch uncommitted "
        f"(trigger {args.trigger_seconds}s, {args.rate} records/s)"
    )


if __name__ == "__main__":
    main()
