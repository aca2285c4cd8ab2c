"""Train the class-data-sharing archives once per machine (`harness jars` calls it; harness.cds says why).

One embedded broker runs with the training flag while a Spark driver, also
training, streams through it (harness.spark.warmup); both archives are
written when their JVMs exit. Under a minute, then never again until the
JDK, pyspark or the Kafka jars change.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Callable

from harness import cds, jars
from harness.cluster import EmbeddedCluster
from harness.cluster.embedded import BROKER_ROLE
from harness.codecs import value_encoder
from harness.errors import HarnessError
from harness.process.supervisor import session_members
from harness.spark.launcher import launch_driver
from harness.spark.session import DRIVER_ROLE, driver_classpath
from harness.waiting import wait_for
from pipelines.model import SOURCE_RECORD

TOPIC = "cds-warmup"


def train(say: Callable[[str], None] = print) -> list[str]:
    """Train whichever archive is missing; returns the roles trained."""
    broker_cp, driver_cp = jars.kafka_classpath(), driver_classpath()
    missing = [role for role, cp in ((BROKER_ROLE, broker_cp), (DRIVER_ROLE, driver_cp)) if not cds.is_trained(role, cp)]
    if not missing:
        return []
    say(f"training class-data-sharing archives ({', '.join(missing)}), once: under a minute")
    with tempfile.TemporaryDirectory(prefix="harness-cds-") as tmp, cds.training(BROKER_ROLE, broker_cp) as broker_flags:
        cluster = EmbeddedCluster.create(Path(tmp) / "cluster", brokers=1)
        if BROKER_ROLE in missing:
            cluster.extra_java_options = broker_flags
        with cluster:
            cluster.start()
            _fill_topic(cluster)
            if DRIVER_ROLE in missing:
                with cds.training(DRIVER_ROLE, driver_cp) as driver_flags:
                    _run_driver(cluster, Path(tmp) / "driver", " ".join(driver_flags))
    return missing


def _fill_topic(cluster: EmbeddedCluster) -> None:
    """The source topic, with records as the generator writes them (the training driver creates the topics its
    streamlets write)."""
    from kafka import KafkaProducer

    with cluster.admin() as admin:
        admin.create_topic(TOPIC, partitions=2)
    encode = value_encoder("json", SOURCE_RECORD)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all")
    start_ms = int(time.time() * 1000)
    for seq in range(2000):
        record = {"key": f"k{seq % 8:04d}", "seq": seq // 8, "event_time_ms": start_ms + seq * 10, "payload": "x" * 16}
        producer.send(TOPIC, key=record["key"].encode(), value=encode(record))
    producer.flush()
    producer.close()


def _run_driver(cluster: EmbeddedCluster, workdir: Path, java_options: str) -> None:
    """The training driver, in a process group of its own (stopped with the cluster's others on any failure)."""
    workdir.mkdir(parents=True)
    log = workdir / "driver.log"
    driver = launch_driver(cluster.supervisor, "cds-warmup", "harness.spark.warmup",
                           [cluster.bootstrap_servers, TOPIC, str(workdir), java_options], log)
    code = driver.wait_exit(timeout=600)
    # The JVM outlives the Python process: it writes the archive after it sees py4j's pipe close.
    wait_for(lambda: not session_members(driver.record), timeout=120, what="the training driver's JVM to write its archive")
    if code != 0:
        last = (log.read_text(errors="replace").strip().splitlines() or ["no output"])[-1]
        raise HarnessError(f"training the Spark driver's CDS archive failed (exit {code}): {last}")
