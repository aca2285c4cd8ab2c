"""Train the class-data-sharing archives once per machine (`harness jars` calls it; harness.cds says why).

One embedded broker runs with the training flag while a Spark driver, also
training, streams through it (harness.spark.warmup); spark-submit's launcher
JVM, which runs before the driver's, trains its own. Each archive is written
when its JVM exits. Under a minute, then never again until the
JDK, pyspark or the Kafka jars change.
"""

from __future__ import annotations

import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Callable

from harness import cds, jars
from harness.cluster import EmbeddedCluster
from harness.cluster.embedded import BROKER_ROLE
from harness.codecs import value_encoder
from harness.errors import HarnessError
from harness.process.supervisor import session_members
from harness.spark.launcher import launch_driver
from harness.spark.session import DRIVER_ROLE, LAUNCHER_ROLE, driver_classpath, launcher_classpath, launcher_env
from harness.waiting import wait_for
from pipelines.model import SOURCE_RECORD

TOPIC = "cds-warmup"


def train(say: Callable[[str], None] = print) -> list[str]:
    """Train whichever archive is missing; returns the roles trained."""
    classpaths = {
        BROKER_ROLE: jars.kafka_classpath(),
        DRIVER_ROLE: driver_classpath(),
        LAUNCHER_ROLE: launcher_classpath(),
    }
    missing = [role for role, cp in classpaths.items() if not cds.is_trained(role, cp)]
    if not missing:
        return []
    say(f"training class-data-sharing archives ({', '.join(missing)}), once: under a minute")
    with tempfile.TemporaryDirectory(prefix="harness-cds-") as tmp, ExitStack() as trainings:
        flags = {role: trainings.enter_context(cds.training(role, classpaths[role])) for role in missing}
        cluster = EmbeddedCluster.create(Path(tmp) / "cluster", brokers=1)
        cluster.extra_java_options = flags.get(BROKER_ROLE, [])
        with cluster:
            cluster.start()
            _fill_topic(cluster)
            if DRIVER_ROLE in flags or LAUNCHER_ROLE in flags:  # spark-submit runs the launcher before the driver
                _run_driver(
                    cluster,
                    Path(tmp) / "driver",
                    " ".join(flags.get(DRIVER_ROLE, [])),
                    launcher_env(archive_flags=flags[LAUNCHER_ROLE]) if LAUNCHER_ROLE in flags else {},
                )
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


def _run_driver(cluster: EmbeddedCluster, workdir: Path, java_options: str, env: dict[str, str]) -> None:
    """The training driver, in a process group of its own (stopped with the cluster's others on any failure)."""
    workdir.mkdir(parents=True)
    log = workdir / "driver.log"
    driver = launch_driver(
        cluster.supervisor,
        "cds-warmup",
        "harness.spark.warmup",
        [cluster.bootstrap_servers, TOPIC, str(workdir), java_options],
        log,
        env=env,
        cwd=workdir,  # what Spark leaves in its working folder (artifacts/) goes with the training, not here
    )
    code = driver.wait_exit(timeout=600)
    # The JVM outlives the Python process: it writes the archive after it sees py4j's pipe close.
    wait_for(
        lambda: not session_members(driver.record), timeout=120, what="the training driver's JVM to write its archive"
    )
    if code != 0:
        last = (log.read_text(errors="replace").strip().splitlines() or ["no output"])[-1]
        raise HarnessError(f"training the Spark driver's CDS archive failed (exit {code}): {last}")
