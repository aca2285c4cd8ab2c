"""A fault-free pipeline run: start everything, produce for a while, drain, keep the evidence.

    cluster -> topics -> streamlet drivers -> generator -> (run) -> drain -> stop -> save

Drain means: stop the generator, then wait until every query of every
streamlet has processed its input topics up to their log-end offsets, in
pipeline order, then stop the drivers gracefully. Whatever happens (an error,
Ctrl-C, SIGTERM) every process started is stopped and the evidence is kept.
"""

from __future__ import annotations

import json
import platform
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from harness import jars
from harness.cluster import EmbeddedCluster, KafkaAdmin, read_topic
from harness.evidence.history import History
from harness.evidence.layout import RunLayout
from harness.evidence.progress import processed_offsets, query_events, started_queries
from harness.errors import HarnessError
from harness.process import ManagedProcess, Supervisor
from harness.scenario import Scenario
from harness.spark.launcher import launch_driver
from harness.waiting import wait_for
from harness.workload.settings import WorkloadSettings
from pipelines.blueprint import TopicSpec
from pipelines.settings import DriverSettings

EXTERNAL_TOPIC_PREFIX = "harness."


@dataclass
class RunSummary:
    run_dir: str
    scenario: str
    acked: int = 0
    unknown: int = 0
    duration_s: float = 0.0
    drain_s: float = 0.0
    driver_exit_codes: dict = field(default_factory=dict)
    topics: dict = field(default_factory=dict)  # blueprint topic name -> actual topic name


class PipelineRun:
    """One run of a scenario's pipeline; use as a context manager so cleanup always happens."""

    def __init__(self, scenario: Scenario, run_dir: Path, say: Callable[[str], None] = print):
        self.scenario = scenario
        self.layout = RunLayout(Path(run_dir).resolve())
        self.layout.root.mkdir(parents=True, exist_ok=True)
        self.say = say
        self.history = History(self.layout.history)
        self.supervisor = Supervisor(self.layout.pids)
        self.cluster: EmbeddedCluster | None = None
        self.bootstrap = scenario.cluster.bootstrap_servers or ""
        self.drivers: dict[str, ManagedProcess] = {}
        self.generator: ManagedProcess | None = None
        self.run_id = self.layout.root.name

    # -- topics ----------------------------------------------------------------

    def topic_name(self, spec: TopicSpec) -> str:
        """On a cluster the harness did not create, every topic is in the harness namespace."""
        if self.cluster is None:
            return f"{EXTERNAL_TOPIC_PREFIX}{self.run_id}.{spec.name}"
        return spec.name

    def all_topics(self) -> list[TopicSpec]:
        return [self.scenario.workload.topic] + self.scenario.blueprint.hops()

    # -- phases ----------------------------------------------------------------

    def start_cluster(self) -> None:
        if self.scenario.cluster.bootstrap_servers:
            self.say(f"external cluster {self.bootstrap}: only topics named {EXTERNAL_TOPIC_PREFIX}{self.run_id}.* are created and used")
            self.history.record("cluster", kind="external", bootstrap_servers=self.bootstrap)
            return
        t0 = time.monotonic()
        self.cluster = EmbeddedCluster.create(self.layout.cluster, brokers=self.scenario.cluster.brokers)
        self.cluster.start()
        self.bootstrap = self.cluster.bootstrap_servers
        for broker in self.cluster.brokers:
            self.history.record("process_started", process=broker.name, pid=broker.pid, role="broker")
        self.say(f"Kafka {self.cluster.kafka_version}: {len(self.cluster.brokers)} broker(s) at {self.bootstrap} ({time.monotonic() - t0:.1f}s)")

    def create_topics(self) -> None:
        brokers = len(self.cluster.brokers) if self.cluster else None
        with KafkaAdmin(self.bootstrap) as admin:
            for spec in self.all_topics():
                replication = min(spec.replication, brokers) if brokers else spec.replication
                name = self.topic_name(spec)
                admin.create_topic(name, spec.partitions, replication, spec.config)
                self.history.record("topic_created", topic=name, partitions=spec.partitions, replication=replication, config=spec.config)

    def driver_settings(self, name: str) -> DriverSettings:
        bp = self.scenario.blueprint
        inst = bp.streamlets[name]
        return DriverSettings(
            name=name,
            kind=inst.kind,
            settings=inst.settings,
            bootstrap_servers=self.bootstrap,
            run_dir=str(self.layout.root),
            inputs={port: self.topic_name(t) for port, t in bp.inputs_of(name).items()},
            outputs={port: self.topic_name(t) for port, t in bp.outputs_of(name).items()},
            source_topic=self.topic_name(self.scenario.workload.topic) if inst.spec.source_topic else None,
            source=self.scenario.options_for(name),
            store_url=self.scenario.store_url,
        )

    def start_driver(self, name: str) -> ManagedProcess:
        path = self.layout.driver_settings(name)
        self.driver_settings(name).save(path)
        proc = launch_driver(self.supervisor, f"streamlet-{name}", "pipelines.driver", [str(path)], self.layout.log(f"streamlet-{name}"))
        self.drivers[name] = proc
        self.history.record("process_started", process=f"streamlet-{name}", pid=proc.pid, role="driver", streamlet=name)
        return proc

    def start_drivers(self, timeout: float = 240.0) -> None:
        t0 = time.monotonic()
        for name in self.scenario.blueprint.order():
            self.start_driver(name)

        def all_started() -> bool:
            return all(started_queries(query_events(self.layout.progress(n))) for n in self.drivers)

        wait_for(all_started, timeout=timeout, interval=0.5, what="every streamlet's queries to start", abort=self.dead_driver)
        self.say(f"{len(self.drivers)} streamlet drivers running ({', '.join(self.drivers)}) after {time.monotonic() - t0:.1f}s")

    def dead_driver(self) -> str | None:
        for name, proc in self.drivers.items():
            if not proc.running():
                self.history.record("process_exited", process=f"streamlet-{name}", pid=proc.pid, exit_code=proc.returncode)
                return f"streamlet {name} exited with code {proc.returncode} (see {proc.record.log_path})"
        return None

    def start_generator(self, duration_s: float) -> None:
        w = self.scenario.workload
        settings = WorkloadSettings(
            bootstrap_servers=self.bootstrap, topic=self.topic_name(w.topic), ack_log=str(self.layout.ack_log),
            keys=w.keys, rate=w.rate, duration_s=duration_s, payload_bytes=w.payload_bytes, seed=w.seed,
            late_share=w.late_share, late_by_s=w.late_by_s, late_after=int(w.late_after_s * w.rate),
            idempotence=w.idempotence,
        )
        settings.save(self.layout.generator_settings)
        self.generator = self.supervisor.start(
            "generator", [sys.executable, "-m", "harness.workload.generator", str(self.layout.generator_settings)],
            self.layout.log("generator"),
        )
        self.history.record("process_started", process="generator", pid=self.generator.pid, role="generator")

    def wait_for_generator(self, duration_s: float) -> None:
        t0 = time.monotonic()
        last_report = 0.0
        while self.generator.running():
            problem = self.dead_driver()
            if problem:
                raise HarnessError(problem)
            elapsed = time.monotonic() - t0
            if elapsed - last_report >= 10:
                self.say(f"  {elapsed:5.0f}s / {duration_s:.0f}s: {ack_counts(self.layout.ack_log)[0]} records acknowledged")
                last_report = elapsed
            if elapsed > duration_s + 120:
                raise HarnessError(f"the generator did not finish within {duration_s + 120:.0f}s")
            time.sleep(0.5)
        code = self.generator.wait_exit()
        self.history.record("process_exited", process="generator", pid=self.generator.pid, exit_code=code)
        if code != 0:
            raise HarnessError(f"the generator failed with exit code {code} (see {self.generator.record.log_path})")

    def drain(self, timeout: float = 180.0) -> float:
        """Wait until every query has processed its inputs up to their current log-end offsets."""
        t0 = time.monotonic()
        order = self.scenario.blueprint.order()

        def drained() -> bool:
            with KafkaAdmin(self.bootstrap) as admin:
                for name in order:
                    s = self.driver_settings(name)
                    topics = list(s.inputs.values()) + ([s.source_topic] if s.source_topic else [])
                    ends = {(o.topic, o.partition): o.log_end for o in admin.offsets(topics)}
                    events = query_events(self.layout.progress(name))
                    done = processed_offsets(events)
                    for query in started_queries(events):
                        got = done.get(query, {})
                        if any(got.get(tp, 0) < end for tp, end in ends.items() if end > 0):
                            return False
            return True

        wait_for(drained, timeout=timeout, interval=1.0, what="the pipeline to drain", abort=self.dead_driver)
        self.history.record("drained")
        return time.monotonic() - t0

    def stop_drivers(self) -> dict:
        codes = {}
        for name, proc in self.drivers.items():
            codes[name] = proc.stop(timeout=60)
            self.history.record("process_stopped", process=f"streamlet-{name}", pid=proc.pid, signal="SIGTERM", exit_code=codes[name])
        return codes

    def save_topics(self) -> None:
        """Keep every record still retained in the source and intermediate topics, for the checker."""
        for spec in self.all_topics():
            name = self.topic_name(spec)
            path = self.layout.topic_dump(name)
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "w") as out:
                for r in read_topic(self.bootstrap, name, timeout=120):
                    out.write(json.dumps({"partition": r.partition, "offset": r.offset, "timestamp_ms": r.timestamp,
                                          "key": r.key.decode() if r.key else None,
                                          "value": json.loads(r.value)}) + "\n")

    def save_versions(self) -> None:
        import kafka
        import pyspark

        versions = {
            "python": platform.python_version(),
            "pyspark": pyspark.__version__,
            "spark_kafka_connector": jars.connector_version(),
            "kafka_broker": self.cluster.kafka_version if self.cluster else "external",
            "kafka_python": kafka.__version__,
        }
        self.layout.versions.write_text(json.dumps(versions, indent=2))

    def close(self) -> None:
        """Stop every process this run started (drivers, generator, brokers), whatever state it is in."""
        self.supervisor.stop_all(timeout=30)
        if self.cluster is not None:
            self.cluster.stop()
        self.history.record("run_ended")
        self.history.close()

    def __enter__(self) -> "PipelineRun":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def ack_counts(ack_log: Path) -> tuple[int, int]:
    """(acknowledged, unknown) records in the generator's ack log so far."""
    acked = unknown = 0
    try:
        with open(ack_log, "rb") as fh:
            next(fh, None)  # header
            for line in fh:
                if b",acked," in line:
                    acked += 1
                else:
                    unknown += 1
    except FileNotFoundError:
        pass
    return acked, unknown


def run_pipeline(scenario: Scenario, run_dir: Path, duration_s: float | None = None,
                 say: Callable[[str], None] = print) -> RunSummary:
    """Run the scenario's pipeline without faults and keep the evidence in `run_dir`."""
    duration = scenario.workload.duration_s if duration_s is None else duration_s
    t0 = time.monotonic()
    with PipelineRun(scenario, run_dir, say) as run:
        run.layout.scenario.write_text(json.dumps({"resolved": {"duration_s": duration, "seed": scenario.workload.seed},
                                                   "scenario": scenario.raw}, indent=2, default=str))
        run.start_cluster()
        run.save_versions()
        run.create_topics()
        run.start_drivers()
        run.start_generator(duration)
        say(f"generator producing {scenario.workload.rate:g} records/s for {duration:g}s")
        run.wait_for_generator(duration)
        drain_s = run.drain()
        say(f"drained in {drain_s:.1f}s")
        codes = run.stop_drivers()
        run.save_topics()
        acked, unknown = ack_counts(run.layout.ack_log)
        summary = RunSummary(
            run_dir=str(run.layout.root), scenario=scenario.name, acked=acked, unknown=unknown,
            duration_s=time.monotonic() - t0, drain_s=drain_s, driver_exit_codes=codes,
            topics={t.name: run.topic_name(t) for t in run.all_topics()},
        )
        run.layout.summary.write_text(json.dumps(asdict(summary), indent=2))
    return summary
