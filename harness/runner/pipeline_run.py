"""One pipeline run, composed of its services: the Kafka cluster (kafka_service.py), Spark (spark_service.py), the
streamlets' drivers (streamlets.py), the generator (generator.py), the topics' recording (recording.py) and the
outputs (outputs.py), over the pipeline's wiring (topology.py).

    cluster -> topics -> streamlet drivers -> generator -> (faults) -> drain -> stop -> save

Drain means: once the generator is done, wait until every query of every
running streamlet has processed its input topics up to their log-end offsets,
then stop the drivers gracefully. A driver that ends by itself (a query
failed) is recorded with its error and left down: that is evidence, not a
reason to stop the run. Whatever happens (an error, Ctrl-C, SIGTERM) every
process started is stopped and the evidence is kept.

The run is what fault kinds (harness/faults/target.py), applications (run_parts.py) and output kinds
(harness/outputs/run.py) are given: its methods below are those interfaces, each answered by one service.
"""

from __future__ import annotations

import json
import platform
from pathlib import Path
from typing import Callable

from contract import scratch as scratch_folder
from harness.cluster import EmbeddedCluster, KafkaAdmin
from harness.cluster.access import KafkaAccess
from harness.codecs import Decode
from harness.errors import EvidenceIncomplete
from harness.evidence.history import EVIDENCE_INCOMPLETE, PRODUCERS_RECORDED, RUN_ENDED, History
from harness.evidence.layout import RunLayout
from harness.evidence.producers import record_producers
from harness.faults.undo import Undos
from harness.network import NetworkLinks
from harness.outputs import Probe
from harness.process import ManagedProcess, Supervisor
from harness.runner.generator import Generator
from harness.runner.job_folders import JobFolders
from harness.runner.kafka_service import ADMIN_PATIENCE_S, KafkaService
from harness.runner.outputs import Outputs
from harness.runner.recording import Recording
from harness.runner.registry import Registry
from harness.runner.shared import RunShared
from harness.runner.spark_service import SparkService
from harness.runner.streamlets import Streamlets
from harness.runner.topology import Topology
from harness.scenario import Scenario
from harness.scenario.blueprint import TopicSpec
from harness.spark.standalone import StandaloneCluster
from harness.spark.versions import SparkRuntime
from harness.world.mountpoints import MountPoints
from pipelines.settings import DriverPaths, SourceOptions


class PipelineRun:
    """One run of a scenario's pipeline; use as a context manager so cleanup always happens."""

    def __init__(self, scenario: Scenario, run_dir: Path, say: Callable[[str], None] = print):
        self.scenario = scenario
        self.layout = RunLayout(Path(run_dir).resolve())
        self.layout.root.mkdir(parents=True, exist_ok=True)
        self.say = say
        self.history = History(self.layout.history)
        self.undos = Undos(self.history)  # faults' undos that failed, tried again at the drain
        self.supervisor = Supervisor(self.layout.pids)
        self.job_folders = JobFolders(self.layout)  # what Spark leaves in a team's job folder, moved here at the end
        self.mount_points = MountPoints(self.layout.mount_points)  # made for the jobs' worlds, removed at the end
        shared = RunShared(scenario, self.layout, self.history, self.supervisor, say)
        self.run_id = shared.run_id
        self.topology = Topology(scenario, self.run_id)
        self.brokers = KafkaService(shared, self.topology)
        self.spark = SparkService(shared, self.brokers)
        self.streamlets = Streamlets(shared, self, self.topology, self.brokers, self.spark)
        self.outputs = Outputs(self, scenario)
        self.sinks = self.outputs.sinks
        self.generator = Generator(shared, self.topology, self.brokers)
        self.recording = Recording(shared, self.topology, self.brokers)
        self.registry = Registry(shared, self.topology)
        # What a fault changes for the drivers' restarts and the generator's start (harness/faults/target.py).
        self.drivers: dict[str, ManagedProcess] = self.streamlets.procs
        self.failed: dict[str, str] = self.streamlets.failed
        self.under_fault: set[str] = self.streamlets.under_fault
        self.source_overrides: dict[str, SourceOptions] = self.streamlets.source_overrides
        self.setting_overrides: dict[str, dict] = self.streamlets.setting_overrides
        self.progress = self.streamlets.progress
        self.restart_patience = self.streamlets.restart_patience

    # -- the interfaces: harness/faults/target.py, run_parts.py, harness/outputs/run.py ------------------------------

    @property
    def store_url(self) -> str | None:
        """The scenario's PostgreSQL store (password included: it never leaves this process)."""
        return self.scenario.store_url

    @property
    def recordings(self) -> str:
        return self.scenario.recordings

    @property
    def kafka(self) -> KafkaAccess:
        return self.brokers.kafka

    @property
    def cluster(self) -> EmbeddedCluster | None:
        return self.brokers.cluster

    @property
    def network(self) -> NetworkLinks | None:
        return self.brokers.network

    @property
    def spark_cluster(self) -> StandaloneCluster | None:
        return self.spark.cluster

    @property
    def late_events(self) -> dict:
        return self.generator.late_events

    @late_events.setter
    def late_events(self, params: dict) -> None:  # a fault kind gives the generator its share before it starts
        self.generator.late_events = params

    @property
    def resend(self) -> dict:
        return self.generator.resend

    @resend.setter
    def resend(self, params: dict) -> None:
        self.generator.resend = params

    @property
    def ack_log(self) -> Path:
        return self.generator.ack_log

    def admin(self, patience_s: float = ADMIN_PATIENCE_S) -> KafkaAdmin:
        return self.brokers.admin(patience_s)

    def broker(self, target: str):
        return self.brokers.broker(target)

    def client_access(self, name: str) -> KafkaAccess:
        return self.brokers.client_access(name)

    def topic_name(self, spec: TopicSpec) -> str:
        return self.topology.topic_name(spec)

    def all_topics(self) -> list[TopicSpec]:
        return self.topology.all_topics()

    def input_topics(self, name: str) -> list[str]:
        return self.topology.input_topics(name)

    def output_topics(self, name: str) -> list[str]:
        return self.topology.output_topics(name)

    def output_topic(self, name: str) -> str:
        return self.topology.output_topic(name)

    def value_decoders(self) -> dict[str, Decode]:
        return self.topology.value_decoders()

    def prepare_spark(self) -> SparkRuntime:
        return self.spark.prepare()

    def spark_master(self) -> str | None:
        return self.spark.master()

    def job_requirements(self, name: str) -> Path | None:
        return self.spark.requirements.get(name)

    def app_name(self, name: str) -> str:
        return self.spark.app_name(name)

    def driver_env(self) -> dict[str, str]:
        return self.spark.driver_env()

    def driver_paths(self, name: str) -> DriverPaths:
        return self.streamlets.paths(name)

    def source_options(self, name: str) -> SourceOptions:
        return self.streamlets.source_options(name)

    def committed_offsets(self, name: str) -> dict[tuple[str, int], int]:
        return self.streamlets.committed_offsets(name)

    def has_crash_point(self, name: str) -> bool:
        return self.streamlets.has_crash_point(name)

    def start_driver(self, name: str) -> ManagedProcess:
        return self.streamlets.start(name)

    def set_aside_driver(self, name: str) -> ManagedProcess:
        """The streamlet's running driver, tracked apart from now on (`-zombie`): another may start in its place,
        leaving what it has in its scratch folder."""
        scratch_folder.keep_present(self.layout.spark_local(name))
        return self.supervisor.set_aside(self.drivers[name].name, f"{self.drivers[name].name}-zombie")

    def real_time(self, name: str) -> bool:
        return self.streamlets.real_time(name)

    def next_run(self, name: str) -> ManagedProcess | None:
        return self.streamlets.next_run(name)

    def wait_up(self, name: str, timeout: float | None = None) -> bool:
        return self.streamlets.wait_up(name, timeout)

    def exited_drivers(self) -> list[str]:
        return self.streamlets.exited()

    def dead_driver(self) -> str | None:
        return self.streamlets.dead()

    def output_probes(self, name: str | None = None) -> list[Probe]:
        return self.outputs.probes(name)

    def wait_recorded(self, timeout: float = 120.0) -> None:
        self.recording.wait_recorded(timeout)

    def record_new_partitions(self, topic: str) -> None:
        self.recording.follow_new_partitions(topic)

    def generator_done(self) -> bool:
        return self.generator.done()

    def stop_generator(self, reason: str) -> None:
        self.generator.stop(reason)

    # -- the run's own -------------------------------------------------------------------------------------------

    def processes(self) -> list[ManagedProcess]:
        """Every process this run started that it still tracks: brokers, drivers, the generator."""
        return self.brokers.processes() + self.supervisor.processes()

    def save_producers(self) -> None:
        """producers.csv, for a fault that needs the brokers' producer of each batch (of the pipeline's topics) and for
        a transactional workload (of its source topics), from the embedded brokers' log segments (on a cluster the
        harness did not start there are none: nothing is written)."""
        workload = self.scenario.workload
        hops = any(r.fault.records_producers for r in self.scenario.faults)
        if self.cluster is None or not (hops or workload.transaction_records):
            return
        topics = {self.topic_name(t) for t in self.scenario.blueprint.hops()} if hops else set()
        topics |= {self.topic_name(s.topic) for s in workload.fed} if workload.transaction_records else set()
        batches = record_producers(self.layout.cluster, topics, self.layout.producers)
        self.history.record(PRODUCERS_RECORDED, topics=sorted(topics), batches=batches)

    def save_evidence(self) -> None:
        """After the drivers stopped: the topics' recording completed, the egresses' states exported, the
        PostgreSQL stores copied, the outputs exported. A step that fails is recorded (evidence_incomplete) and the
        others still run; the first failure is raised once all have had their turn."""
        self.recording.read_source()  # for audits, not the checker: a failure is recorded, the run goes on
        errors = []
        steps = {
            "save_topics": self.recording.save,
            "export_states": self.streamlets.export_states,
            "save_stores": self.outputs.save_stores,
            "export_outputs": self.outputs.export,
            "save_producers": self.save_producers,
        }
        for name, step in steps.items():
            try:
                step()
            except Exception as exc:  # the evidence of the other steps is still worth keeping
                error = str(exc) or type(exc).__name__
                self.history.record(EVIDENCE_INCOMPLETE, step=name, error=error)
                errors.append(f"{name}: {error}")
        if errors:
            raise EvidenceIncomplete("; ".join(errors))

    def save_versions(self) -> None:
        import confluent_kafka
        import kafka

        versions = {
            "python": platform.python_version(),
            **self.spark.versions(),
            **self.brokers.version(),
            "kafka_python": kafka.__version__,
            "confluent_kafka": confluent_kafka.version(),  # the generator's producer
            "librdkafka": confluent_kafka.libversion()[0],
        }
        self.layout.versions.write_text(json.dumps(versions, indent=2))

    def close(self) -> None:
        """Stop every process this run started (drivers, generator, brokers), whatever state it is in; a fault's
        thread still restarting one after this is refused."""
        self.streamlets.close()
        self.spark.close()
        self.recording.close()
        self.supervisor.close(timeout=30)
        self.job_folders.tidy()
        self.mount_points.release()
        self.brokers.close()
        self.history.record(RUN_ENDED)
        self.history.close()

    def __enter__(self) -> "PipelineRun":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
