"""The foundation demonstration behind `make run`: a checkpointed Kafka -> Kafka query, stopped and restarted.

It proves the ground the harness stands on: a real broker, a real Spark
driver with the real connector, a real signal, and a restart that resumes
from the checkpoint.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from kafka import KafkaProducer

from harness.cluster import EmbeddedCluster, KafkaAdmin, read_topic
from harness.errors import HarnessError
from harness.evidence.checkpoint import committed_positions, last_planned
from harness.process import Supervisor
from harness.spark.launcher import launch_driver
from harness.waiting import wait_for

TOPIC_NAMESPACE = "harness-"


@dataclass
class DemoResult:
    source: str = ""
    sink: str = ""
    sent: int = 0
    received: int = 0
    lost: int = 0
    duplicated: int = 0
    broker_start_s: float = 0.0
    first_output_s: float = 0.0
    restart_output_s: float = 0.0
    stop_exit_code: int | None = None
    resumed_from: dict = field(default_factory=dict)
    leftover_processes: list[int] = field(default_factory=list)


def produce(bootstrap: str, topic: str, first: int, count: int) -> int:
    """Send values first..first+count-1 with acks=all; return how many were acknowledged."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    try:
        futures = [
            producer.send(topic, key=str(n % 8).encode(), value=str(n).encode()) for n in range(first, first + count)
        ]
        producer.flush(timeout=60)
        return sum(1 for f in futures if f.succeeded())
    finally:
        producer.close()


def topic_size(bootstrap: str, topic: str) -> int:
    with KafkaAdmin(bootstrap) as admin:
        return sum(o.log_end for o in admin.offsets([topic]))


def run_demo(
    workdir: Path, records: int = 1000, say: Callable[[str], None] = print, bootstrap: str | None = None
) -> DemoResult:
    """Run the demonstration on a new embedded cluster, or on `bootstrap` (an external cluster).

    On an external cluster only two new topics in the harness- namespace are
    created and written; nothing else is touched.
    """
    workdir = Path(workdir).resolve()
    run_id = time.strftime("%Y%m%d%H%M%S")
    result = DemoResult(source=f"{TOPIC_NAMESPACE}demo-{run_id}-in", sink=f"{TOPIC_NAMESPACE}demo-{run_id}-out")
    source, sink = result.source, result.sink
    started = time.monotonic()
    cluster = EmbeddedCluster.create(workdir / "cluster", brokers=1) if bootstrap is None else None
    supervisor = Supervisor(workdir / "pids")
    try:
        if cluster is not None:
            cluster.start()
            bootstrap = cluster.bootstrap_servers
            result.broker_start_s = time.monotonic() - started
            say(f"Kafka {cluster.kafka_version} (KRaft, 1 broker) at {bootstrap}, up in {result.broker_start_s:.1f}s")
        else:
            say(f"external cluster at {bootstrap}: creating and using only topics {source} and {sink}")
        with KafkaAdmin(bootstrap) as admin:
            replication = -1 if cluster is None else 1  # external: the cluster's default
            admin.create_topic(source, partitions=2, replication_factor=replication)
            admin.create_topic(sink, partitions=2, replication_factor=replication)
        _stop_and_resume(bootstrap, supervisor, workdir, records, result, say)
    finally:
        supervisor.stop_all()
        brokers = []
        if cluster is not None:
            cluster.stop()
            brokers = [b.process for b in cluster.brokers if b.process]
        result.leftover_processes = [p.pid for p in supervisor.processes() + brokers if p.running()]
    if result.leftover_processes:
        raise HarnessError(f"processes left running after the demo: {result.leftover_processes}")
    return result


def _start_relay(supervisor: Supervisor, workdir: Path, bootstrap: str, source: str, sink: str):
    checkpoint = workdir / "checkpoints" / "relay"
    return launch_driver(
        supervisor,
        "relay",
        "harness.spark.relay",
        ["--bootstrap", bootstrap, "--source", source, "--sink", sink, "--checkpoint", str(checkpoint)],
        workdir / "logs" / "relay.log",
    )


def _wait_for_sink(bootstrap: str, sink: str, checkpoint: Path, expected: int, driver) -> float:
    """Wait until the sink holds `expected` records and the checkpoint has committed them.

    Stopping between a batch's write and its commit would make the
    restart replay that batch (the Kafka sink is at-least-once), which
    is not what this demonstration is about.
    """
    t0 = time.monotonic()
    wait_for(
        lambda: (
            sum(committed_positions(checkpoint).values()) >= expected  # a file read: asked first
            and topic_size(bootstrap, sink) >= expected
        ),
        timeout=180,
        interval=0.5,
        what=f"{expected} records in {sink}, committed in {checkpoint}",
        abort=lambda: None if driver.running() else f"the relay driver exited (see {driver.record.log_path})",
    )
    return time.monotonic() - t0


def _stop_and_resume(
    bootstrap: str, supervisor: Supervisor, workdir: Path, records: int, result: DemoResult, say: Callable[[str], None]
) -> None:
    """Produce, relay, stop the relay, produce more while it is down, restart it from its checkpoint, and count
    what the sink holds."""
    source, sink, checkpoint = result.source, result.sink, workdir / "checkpoints" / "relay"
    result.sent = produce(bootstrap, source, 0, records)
    say(f"produced {result.sent} records to {source} (acks=all)")
    driver = _start_relay(supervisor, workdir, bootstrap, source, sink)
    say(f"relay driver started (pid {driver.pid}): Spark query {source} -> {sink}, checkpoint {checkpoint}")
    result.first_output_s = _wait_for_sink(bootstrap, sink, checkpoint, result.sent, driver)
    say(f"{sink} holds {result.sent} records {result.first_output_s:.1f}s after the driver started")
    result.stop_exit_code = driver.stop(timeout=60)
    say(f"relay stopped with SIGTERM (exit code {result.stop_exit_code}); checkpoint at {last_planned(checkpoint)}")

    result.sent += produce(bootstrap, source, records, records)
    say(f"produced {records} more records while the relay was down")
    driver = _start_relay(supervisor, workdir, bootstrap, source, sink)
    result.resumed_from = last_planned(checkpoint)
    result.restart_output_s = _wait_for_sink(bootstrap, sink, checkpoint, result.sent, driver)
    say(
        f"relay restarted (pid {driver.pid}) from checkpointed batch {result.resumed_from.get('batch')} "
        f"at offsets {result.resumed_from.get('offsets')}; {sink} holds {result.sent} records after "
        f"{result.restart_output_s:.1f}s"
    )
    driver.stop(timeout=60)

    values = Counter(int(r.value) for r in read_topic(bootstrap, sink))
    result.received = sum(values.values())
    result.lost = sum(1 for n in range(result.sent) if values[n] == 0)
    result.duplicated = sum(c - 1 for c in values.values() if c > 1)
