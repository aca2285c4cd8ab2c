"""The mechanics of one pipeline run: cluster, topics, drivers, generator, drain, stop, save.

    cluster -> topics -> streamlet drivers -> generator -> (faults) -> drain -> stop -> save

Drain means: once the generator is done, wait until every query of every
running streamlet has processed its input topics up to their log-end offsets,
then stop the drivers gracefully. A driver that ends by itself (a query
failed) is recorded with its error and left down: that is evidence, not a
reason to stop the run. Whatever happens (an error, Ctrl-C, SIGTERM) every
process started is stopped and the evidence is kept.
"""

from __future__ import annotations

import json
import os
import platform
import secrets
import signal
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Callable

from contract.applications import APPLICATION, FULLY, KAFKA_OUTPUT, OUTPUT_KINDS, WRITTEN_OUTPUTS
from contract.egress import EXPORTED, MAIN_QUERY
from contract.roles import EGRESS, INGRESS
from harness import jars
from harness.cluster import EmbeddedCluster, KafkaAdmin
from harness.cluster.access import KafkaAccess
from harness.cluster.follow import PartitionRecorder
from harness.cluster.security import ClusterSecurity
from harness.cluster.truststore import truststore_pem
from harness.codecs import Decode, avro_decoder, value_decoder
from harness.docker.cluster import ContainerCluster
from harness.docker.foreign import ForeignBrokers
from harness.errors import EvidenceIncomplete, HarnessError, WaitTimeout
from harness.evidence.checkpoint import CheckpointFollower, committed_positions
from harness.evidence.description import PipelineDescription, StreamletDescription
from harness.evidence.history import History
from harness.evidence.layout import RunLayout
from harness.evidence.progress import ProgressFollower
from harness.evidence.topics import COLUMNAR
from harness.faults.kind import GENERATOR
from harness.faults.undo import Undos
from harness.network import NetworkLinks
from harness.network.links import PROCESS as PROXY
from harness.outputs import Probe, Sink, sinks
from harness.process import ManagedProcess, Supervisor
from harness.runner.applications import misplaced_checkpoint, start_application
from harness.runner.executors import ExecutorWatch
from harness.scenario import Scenario
from harness.scenario.applications import declared_filters
from harness.scenario.blueprint import TopicSpec
from harness.secrets import split_password
from harness.spark.launcher import dump_jvm_threads, launch_driver
from harness.spark.paths import driver_paths
from harness.spark.session import launcher_env, log_level, session_conf
from harness.spark.standalone import StandaloneCluster, executor_conf
from harness.spark.versions import SparkRuntime, ensure
from harness.waiting import Patience, wait_for
from harness.workload.generator_settings import TRACE_HEADER, WorkloadSettings
from pipelines.kafka_security import KafkaSecurity
from pipelines.model import SOURCE_RECORD, Schema
from pipelines.settings import DriverPaths, DriverSettings, SourceOptions
from pipelines.stores import egress_store

OWN_PACKAGES = str(Path(__file__).resolve().parents[2])  # where harness, pipelines and contract are imported from


def _last_error(log: str) -> str:
    """The last line of a driver's log that names an error (an application's own log is all there is of why it
    ended), as ": LINE", or ""."""
    try:
        lines = Path(log).read_text(errors="replace").splitlines()[-200:]
    except OSError:
        return ""
    found = [line.strip() for line in lines if "Error" in line or "Exception" in line]
    return f": {found[-1][:300]}" if found else ""


EXTERNAL_TOPIC_PREFIX = "harness."
APP_IDLE_S = 30.0  # an application restarted with nothing to read is taken as up after this long (see wait_up)
ADMIN_PATIENCE_S = 120.0  # longer than a broker fault's default outage plus its restart


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
        self.cluster: EmbeddedCluster | None = None  # the Kafka cluster the harness started (processes or containers)
        self.foreign_brokers: ForeignBrokers | None = None  # cluster.docker.containers of a cluster one runs
        self.links = sorted({r.target for r in scenario.faults if r.fault.target == "link"})  # proxied network links
        self.network: NetworkLinks | None = None
        self.spark_cluster: StandaloneCluster | None = None  # cluster.spark.master: standalone
        self._executor_watch: ExecutorWatch | None = None
        self.kafka: KafkaAccess | None = None  # where the brokers are and how to speak to them (start_cluster)
        self.drivers: dict[str, ManagedProcess] = {}
        self.generator: ManagedProcess | None = None
        self._generator_exit_recorded = False
        self._generator_stopped = False
        self.run_id = self.layout.root.name
        self.source_overrides: dict[str, SourceOptions] = {}  # set by a redeploy
        self.setting_overrides: dict[str, dict] = {}  # e.g. an executor-crash probability
        self.late_events: dict = {}  # late-events: the generator's share, late_by_s, after_s
        self.resend: dict = {}  # resend: the generator's share and after_s
        self.failed: dict[str, str] = {}  # streamlet -> why its driver ended by itself
        # a restarted driver's first batch: at least 240 s, four times what the first start took on this machine
        self.restart_patience = Patience(floor_s=240.0)
        self.under_fault: set[str] = set()  # targets a fault is playing on: their drivers stop on purpose
        self.stopped: set[str] = set()  # streamlets whose drivers the run stopped at its end
        self._spark_conf: dict[type, dict[str, str]] = {}
        self.evidence = (
            True  # False: drivers skip batch stamps and audit (bench/pipeline_throughput.py's overhead figure)
        )
        self.progress: dict[str, ProgressFollower | CheckpointFollower] = {
            name: CheckpointFollower(self.layout.checkpoints(name))
            if inst.kind == APPLICATION
            else ProgressFollower(self.layout.progress(name))
            for name, inst in scenario.blueprint.streamlets.items()
            if inst.runs
        }
        self.recorder: PartitionRecorder | None = None  # the intermediate topics, recorded as they are written
        self.spark_runtime: SparkRuntime | None = None  # the drivers' Spark (prepare_spark)
        self.sinks: dict[str, Sink] = sinks(self, scenario.blueprint.streamlets)  # each output's, by its kind

    @property
    def store_url(self) -> str | None:
        """The scenario's PostgreSQL store (password included: it never leaves this process)."""
        return self.scenario.store_url

    @property
    def recordings(self) -> str:
        return self.scenario.recordings

    def processes(self) -> list[ManagedProcess]:
        """Every process this run started that it still tracks: brokers, drivers, the generator."""
        return (self.cluster.processes() if self.cluster else []) + self.supervisor.processes()

    def admin(self, patience_s: float = ADMIN_PATIENCE_S) -> KafkaAdmin:
        """An admin client of the run's cluster that outlasts the run's own faults for `patience_s` (a broker down or
        paused, a leader moving); on a cluster one runs, it changes only the run's own topics."""
        return KafkaAdmin(self.kafka, patience_s=patience_s)

    def broker(self, target: str):
        """`broker-2`: a broker the harness started, or the second container cluster.docker.containers lists."""
        node = int(target.split("-", 1)[1])
        if self.cluster is not None:
            return self.cluster.broker(node)
        if self.foreign_brokers is not None:
            return self.foreign_brokers.broker(node)
        raise HarnessError(f"{target}: this run has no broker it can fault")

    # -- topics ----------------------------------------------------------------

    def topic_name(self, spec: TopicSpec) -> str:
        """On a cluster the harness did not create, every topic is in the harness namespace."""
        if self.scenario.cluster.bootstrap_servers:
            return f"{EXTERNAL_TOPIC_PREFIX}{self.run_id}.{spec.name}"
        return spec.name

    def all_topics(self) -> list[TopicSpec]:
        return [self.scenario.workload.topic] + self.scenario.blueprint.hops()

    def topic_schemas(self) -> dict[str, tuple[str, Schema]]:
        """Real topic name -> (its codec, the schema of its values): the source's, then each outlet's."""
        found = {self.topic_name(self.scenario.workload.topic): (self.scenario.workload.topic.codec, SOURCE_RECORD)}
        bp = self.scenario.blueprint
        for c in bp.connections:
            found[self.topic_name(c.topic)] = (
                c.topic.codec,
                bp.streamlets[c.outlet[0]].cls.shape.outlet(c.outlet[1]).schema,
            )
        return found

    def value_decoders(self) -> dict[str, Decode]:
        """Real topic name -> how to read its values back (topic dumps, records at risk): a Kafka output written in
        the team's Avro schema with it."""
        decoders = {topic: value_decoder(codec, schema) for topic, (codec, schema) in self.topic_schemas().items()}
        for name, inst in self.scenario.blueprint.streamlets.items():
            if inst.kind == KAFKA_OUTPUT and inst.settings.get("avro"):
                for spec in self.scenario.blueprint.inputs_of(name).values():
                    decoders[self.topic_name(spec)] = avro_decoder(inst.settings["avro"])
        return decoders

    @property
    def ack_log(self) -> Path:
        """Where the generator (and the canaries) log what was sent: acks.csv, or its segments for a run recording
        its evidence in columnar form or a workload of several generator workers (a folder of segments each)."""
        columnar = self.scenario.recordings == COLUMNAR or self.scenario.workload.workers > 1
        return self.layout.ack_segments if columnar else self.layout.ack_log

    def output_identities(self) -> dict[str, dict]:
        """Real name of each topic a Kafka output reads -> the output's identity (contract/identity.py)."""
        return {
            self.topic_name(spec): inst.settings["identity"]
            for name, inst in self.scenario.blueprint.streamlets.items()
            if inst.kind == KAFKA_OUTPUT
            for spec in self.scenario.blueprint.inputs_of(name).values()
        }

    def describe(self) -> PipelineDescription:
        """The pipeline as it runs, resolved (real topic names, every setting, each class's declarations)."""
        blueprint = self.scenario.blueprint
        streamlets = []
        for name in blueprint.order():
            inst = blueprint.streamlets[name]
            egress = inst.role == EGRESS
            streamlets.append(
                StreamletDescription(
                    name,
                    inst.kind,
                    inst.role,
                    inst.settings,
                    tuple(self.input_topics(name)),
                    tuple(self.output_topics(name)),
                    drops_late_events=inst.cls.drops_late_events(inst.settings),
                    window=inst.cls.event_time_window(inst.settings),
                    window_slide=inst.cls.event_time_slide(inst.settings),
                    egress_evidence=inst.cls.egress_evidence if egress else None,
                    audit_query=inst.cls.audit_query(inst.settings) if egress else None,
                    identity=inst.settings.get("identity") if inst.kind in OUTPUT_KINDS else None,
                    written_by=inst.settings["written_by"] if inst.kind in WRITTEN_OUTPUTS else None,
                    deduplicates_within_s=(inst.settings.get("deduplicates") or {}).get("within_s")
                    if inst.kind == APPLICATION
                    else None,
                    # a topic keeps every copy; a table's triggers see every write unless its export says otherwise
                    observed=FULLY if inst.kind in OUTPUT_KINDS else None,
                )
            )
        return PipelineDescription(
            self.scenario.name,
            self.scenario.description,
            self.topic_name(self.scenario.workload.topic),
            tuple(streamlets),
            self.scenario.expectations,
            TRACE_HEADER if self.scenario.workload.headers else None,
        )

    # -- phases ----------------------------------------------------------------

    def external_access(self) -> KafkaAccess:
        """A cluster one runs; changes to topics are held to the run's namespace."""
        return external_access(self.scenario, f"{EXTERNAL_TOPIC_PREFIX}{self.run_id}.", self.layout.root)

    def start_cluster(self) -> None:
        spec = self.scenario.cluster
        if spec.bootstrap_servers:
            self.kafka = self.external_access()
            self.kafka.check()
            self.say(
                f"external cluster {self.kafka.describe()}: only topics named {self.kafka.namespace}* are created, "
                f"changed or deleted (any other is refused), and consumer groups are the run's own"
            )
            if spec.containers:
                self.foreign_brokers = ForeignBrokers(spec.containers, self.kafka, self.layout.log_dir)
                self.say(
                    "broker faults touch only these containers, and leave them running: "
                    f"{self.foreign_brokers.describe()}"
                )
            self.history.record(
                "cluster",
                kind="external",
                bootstrap_servers=spec.bootstrap_servers,
                security=self.kafka.describe(),
                containers=list(spec.containers),
            )
            return
        t0 = time.monotonic()
        client = self.scenario.kafka
        security = (
            ClusterSecurity(spec.security, (client and client.sasl_mechanism) or "SCRAM-SHA-256")
            if spec.security
            else None
        )
        if spec.docker:
            from harness.docker import engine, images

            image = spec.docker_image or images.ensure_kafka(engine.client(), say=self.say)
            self.cluster = ContainerCluster.create(
                self.layout.cluster,
                brokers=spec.brokers,
                links=self.links,
                security=security,
                image=image,
                run_id=self.run_id,
            )
            self.say(f"brokers in containers of {image} (host network; removed at the end)")
        else:
            self.cluster = EmbeddedCluster.create(
                self.layout.cluster, brokers=spec.brokers, links=self.links, security=security
            )
        self.cluster.start()
        for broker in self.cluster.brokers:
            self.history.record("process_started", process=broker.name, pid=broker.pid, role="broker")
        self.kafka = self.cluster.client_access()
        if security is not None and security.mode == "sasl_ssl":
            # The scenario's user, or one of the run's own whose password exists only in memory.
            username = client.username if client else "harness"
            password = client.password.resolve("kafka.password") if client else secrets.token_urlsafe(24)
            self.cluster.add_scram_user(username, password)
            self.kafka = self.cluster.client_access(username, password)
        self.say(
            f"Kafka {self.cluster.kafka_version}: {len(self.cluster.brokers)} broker(s) at {self.kafka.describe()} "
            f"({time.monotonic() - t0:.1f}s)"
        )
        if self.links:
            self.network = NetworkLinks(
                self.supervisor, self.layout.network_control, self.layout.log(PROXY), self.cluster.link_routes()
            ).start()
            self.history.record(
                "process_started",
                process=PROXY,
                pid=self.network.process.pid,
                role="network-proxy",
                links={link: self.client_access(link).bootstrap_servers for link in self.links},
            )
            self.say(
                "network links through the proxy: "
                + ", ".join(f"{link} at {self.client_access(link).bootstrap_servers}" for link in self.links)
            )

    def start_spark(self) -> None:
        """The Spark standalone cluster the scenario asks for (master and workers), before any driver."""
        spec = self.scenario.cluster
        if not spec.spark_standalone:
            if spec.spark_master != "local":
                self.say(
                    f"Spark master {spec.spark_master}: only the applications named harness-{self.run_id}-* are this "
                    "run's"
                )
            return
        t0 = time.monotonic()
        self.spark_cluster = StandaloneCluster(
            self.supervisor, self.layout.spark_cluster, self.layout.log_dir, spec.spark_workers
        ).start()
        for proc in [self.spark_cluster.master, *self.spark_cluster.worker_procs.values()]:
            self.history.record("process_started", process=proc.name, pid=proc.pid, role=proc.name.rsplit("-", 1)[0])
        apps = {self.app_name(name): name for name in self.scenario.blueprint.streamlets}
        self._executor_watch = ExecutorWatch(self.spark_cluster, apps, self.history).start()
        self.say(
            f"Spark standalone: master {self.spark_cluster.master_url}, {spec.spark_workers} worker(s) "
            f"({time.monotonic() - t0:.1f}s)"
        )

    def spark_master(self) -> str | None:
        """The drivers' master URL; None: each runs local[1] (DriverSettings' default)."""
        if self.spark_cluster is not None:
            return self.spark_cluster.master_url
        master = self.scenario.cluster.spark_master
        return None if master == "local" else master

    def app_name(self, name: str) -> str:
        """A streamlet's Spark application name: on a cluster, the run's id keeps its applications apart."""
        return f"streamlet-{name}" if self.spark_master() is None else f"harness-{self.run_id}-{name}"

    def cluster_conf(self) -> dict[str, str]:
        """What a driver adds on a Spark cluster: its executor (standalone.executor_conf), running this Python with
        the streamlets importable."""
        if self.spark_master() is None:
            return {}
        paths = [OWN_PACKAGES, *self.scenario.import_paths]
        return {
            **executor_conf(),
            "spark.pyspark.python": sys.executable,
            "spark.executorEnv.PYTHONPATH": os.pathsep.join(paths),
        }

    def client_access(self, name: str) -> KafkaAccess:
        """Where a streamlet's driver (or the generator) finds the brokers: its network link's proxy when a
        network fault targets it, the brokers themselves otherwise."""
        if self.network is not None and name in self.network.links:
            return self.kafka.at(self.network.bootstrap(name))
        return self.kafka

    def create_topics(self) -> None:
        brokers = len(self.cluster.brokers) if self.cluster else None
        with self.admin() as admin:
            for spec in self.all_topics():
                replication = min(spec.replication, brokers) if brokers else spec.replication
                name = self.topic_name(spec)
                admin.create_topic(name, spec.partitions, replication, spec.config)
                self.history.record(
                    "topic_created", topic=name, partitions=spec.partitions, replication=replication, config=spec.config
                )

    def driver_settings(self, name: str) -> DriverSettings:
        inst = self.scenario.blueprint.streamlets[name]
        inputs, outputs, source_topic = self.streamlet_topics(name)
        return DriverSettings(
            name=name,
            kind=inst.kind,
            settings={**inst.settings, **self.setting_overrides.get(name, {})},
            bootstrap_servers=self.client_access(name).bootstrap_servers,
            kafka_security=self.kafka.security,
            paths=self.driver_paths(name),
            spark_conf={**self.spark_conf(inst.cls), **self.cluster_conf()},
            **({"master": master} if (master := self.spark_master()) else {}),
            app_name=self.app_name(name),
            log_level=log_level(),
            inputs=inputs,
            outputs=outputs,
            source_topic=source_topic,
            source=self.namespaced(self.source_overrides.get(name) or self.scenario.options_for(name)),
            group_id_prefix=f"{self.kafka.namespace}{name}" if self.kafka.namespace else None,
            store_url=split_password(self.scenario.store_url)[0],
            evidence=self.evidence,
            import_paths=list(self.scenario.import_paths),
            codecs={topic: codec for topic, (codec, _) in self.topic_schemas().items()},
        )

    def namespaced(self, source: SourceOptions) -> SourceOptions:
        """On a cluster one runs, a consumer group the scenario names is the run's own too."""
        if self.kafka.namespace and source.group_id:
            return replace(source, group_id=f"{self.kafka.namespace}{source.group_id}")
        return source

    def driver_paths(self, name: str) -> DriverPaths:
        return driver_paths(self.layout, name, self.scenario.recordings == COLUMNAR)

    def prepare_spark(self) -> SparkRuntime:
        """The drivers' Spark: the harness's own, or the scenario's cluster.spark.version, its environment built and
        its connector fetched first if missing."""
        if self.spark_runtime is None:
            self.spark_runtime = ensure(self.scenario.cluster.spark_version, self.say)
        return self.spark_runtime

    def spark_conf(self, cls) -> dict[str, str]:
        """A driver's Spark configuration: the connector, the jar sets and settings its class declares (checks
        the connector and Java once)."""
        if cls not in self._spark_conf:
            self._spark_conf[cls] = session_conf(cls.spark_conf, cls.spark_jars, self.prepare_spark())
        return self._spark_conf[cls]

    def source_options(self, name: str) -> SourceOptions:
        """How the scenario has the streamlet read the source (before any redeploy changed it)."""
        return self.scenario.options_for(name)

    def streamlet_topics(self, name: str) -> tuple[dict[str, str], dict[str, str], str | None]:
        """A streamlet's real topics: inlet -> topic, outlet -> topic, and the source topic if it is an ingress."""
        bp = self.scenario.blueprint
        return (
            {port: self.topic_name(t) for port, t in bp.inputs_of(name).items()},
            {port: self.topic_name(t) for port, t in bp.outputs_of(name).items()},
            self.topic_name(self.scenario.workload.topic) if bp.streamlets[name].role == INGRESS else None,
        )

    def input_topics(self, name: str) -> list[str]:
        inputs, _, source_topic = self.streamlet_topics(name)
        return list(inputs.values()) + ([source_topic] if source_topic else [])

    def output_topics(self, name: str) -> list[str]:
        return list(self.streamlet_topics(name)[1].values())

    def committed_offsets(self, name: str) -> dict[tuple[str, int], int]:
        """Where the streamlet resumes: per input partition, the lowest position its queries committed."""
        positions: dict[tuple[str, int], int] = {}
        for checkpoint in sorted(self.layout.checkpoints(name).glob("*")):
            for tp, offset in committed_positions(checkpoint).items():
                positions[tp] = min(offset, positions.get(tp, offset))
        return positions

    def driver_env(self) -> dict[str, str]:
        password = split_password(self.scenario.store_url)[1]
        env = {"PGPASSWORD": password} if password else {}  # the settings file holds no password
        env.update(self.kafka.child_env())  # nor the Kafka user's
        env.update(launcher_env(self.prepare_spark()))
        paths = [*filter(None, [self.prepare_spark().pythonpath()]), *self.scenario.import_paths]
        if paths:  # another Spark's environment finds the project there; a user's streamlet (and its UDFs) theirs
            # The harness's own packages first, as in this process (pipelines/kinds.py add_import_paths): a user's
            # folder holding a package named pipelines or harness must not shadow them in a driver or its workers.
            env["PYTHONPATH"] = os.pathsep.join([OWN_PACKAGES, *filter(None, [os.environ.get("PYTHONPATH")]), *paths])
        return env

    def output_probes(self, name: str | None = None) -> list[Probe]:
        """Probes of the outputs application `name` writes (None: every output): when it last committed to one
        (in-flight kills), how many rows it offered (the status line)."""
        streamlets = self.scenario.blueprint.streamlets
        return [
            probe
            for output, sink in self.sinks.items()
            if (name is None or streamlets[output].settings.get("written_by") == name)
            and (probe := sink.probe()) is not None
        ]

    def output_topic(self, name: str) -> str:
        """The real name of the topic Kafka output `name` reads."""
        return self.topic_name(next(iter(self.scenario.blueprint.inputs_of(name).values())))

    def export_outputs(self) -> None:
        """After the drivers stopped: what each output holds and what it was offered, into the run directory."""
        for sink in self.sinks.values():
            sink.export()

    def has_crash_point(self, name: str) -> bool:
        """Whether the streamlet's driver holds a batch at its crash point when armed: one whose queries write
        through the context's foreachBatch says so as it starts them (pipelines/crashpoint.py); one writing only
        with Spark's own sinks, and a team's application, run unchanged, do not."""
        return self.layout.crash_offered(name).exists()

    def start_driver(self, name: str) -> ManagedProcess:
        if self.scenario.blueprint.streamlets[name].kind == APPLICATION:
            proc = start_application(self, name)
        else:
            proc = self._start_streamlet(name)
        self.drivers[name] = proc
        self.failed.pop(name, None)
        self.history.record("process_started", process=f"streamlet-{name}", pid=proc.pid, role="driver", streamlet=name)
        return proc

    def _start_streamlet(self, name: str) -> ManagedProcess:
        path = self.layout.driver_settings(name)
        self.driver_settings(name).save(path)
        proc = launch_driver(
            self.supervisor,
            f"streamlet-{name}",
            "pipelines.driver",
            [str(path)],
            self.layout.log(f"streamlet-{name}"),
            env=self.driver_env(),
            cwd=self.layout.spark_local(name).parent,
            python=self.prepare_spark().python,
        )
        return proc

    def start_drivers(self, timeout: float = 240.0) -> None:
        """Start every streamlet and wait until each has run its first batch: the pipeline is warm. How long that
        took is what a restart is given, scaled (self.restart_patience)."""
        t0 = time.monotonic()
        for name in self.scenario.blueprint.order():
            if name in self.progress:  # an output is not run
                self.start_driver(name)

        def all_reporting() -> bool:
            return all(self.progress[n].poll().reporting(p.pid) for n, p in self.drivers.items())

        misplaced: list[str] = []

        def stop_early() -> str | None:
            dead = self.dead_driver()
            if dead:
                return dead
            misplaced[:] = [m for m in [misplaced_checkpoint(self)] if m]
            return misplaced[0] if misplaced else None

        try:
            wait_for(
                all_reporting, timeout=timeout, interval=0.5, what="every streamlet's first batch", abort=stop_early
            )
        except WaitTimeout as exc:
            if misplaced:  # the job runs, its checkpoint elsewhere: a misconfiguration, said as bad input
                raise HarnessError(misplaced[0]) from None
            silent = [n for n, p in self.drivers.items() if p.running() and not self.progress[n].reporting(p.pid)]
            apps = [n for n in silent if self.scenario.blueprint.streamlets[n].kind == APPLICATION]
            if apps:
                raise HarnessError(
                    f"applications.{apps[0]}: no batch committed in its checkpoint folder "
                    f"({self.layout.checkpoints(apps[0]) / MAIN_QUERY}) while it runs ({exc}): does the job use the "
                    "${checkpoint} it is given as its checkpointLocation?"
                ) from None
            raise
        self.restart_patience.measure(time.monotonic() - t0)
        self.say(
            f"{len(self.drivers)} streamlet drivers running ({', '.join(self.drivers)}) after "
            f"{time.monotonic() - t0:.1f}s"
        )

    def wait_up(self, name: str, timeout: float | None = None) -> bool:
        """Wait until a (re)started driver has run its first batch; False if it ended instead. An application
        restarted with nothing left to read commits no batch (Spark plans none): it counts as up once it has run for
        APP_IDLE_S with its inputs all committed (its recovery time is then unknown: no batch shows it). Without a
        `timeout`, the run's restart patience: scaled by how long the drivers took to start."""
        timeout = self.restart_patience.timeout_s if timeout is None else timeout
        proc = self.drivers[name]
        started = time.monotonic()
        application = self.scenario.blueprint.streamlets[name].kind == APPLICATION

        def idle() -> bool:
            if not application or time.monotonic() - started < APP_IDLE_S or not proc.running():
                return False
            return self.lags(self.log_ends()).get(name) == 0

        try:
            wait_for(
                lambda: self.progress[name].poll().reporting(proc.pid) or not proc.running() or idle(),
                timeout=timeout,
                interval=0.5,
                what=f"streamlet {name} (pid {proc.pid}) to run its first batch",
            )
        except WaitTimeout as exc:
            stacks = self.layout.log(f"streamlet-{name}.stacks")
            if dump_jvm_threads(proc, stacks):
                raise WaitTimeout(f"{exc} (its JVM's threads: {stacks})") from None
            raise
        return proc.running()

    def exited_drivers(self) -> list[str]:
        """Streamlets whose driver ended by itself since the last look; each exit is recorded once, with its error."""
        exited = []
        for name, proc in list(self.drivers.items()):
            if name in self.failed or name in self.under_fault or name in self.stopped or proc.running():
                continue
            failures = self.progress[name].poll().failures
            reason = failures[-1] if failures else f"exit code {proc.returncode}{_last_error(proc.record.log_path)}"
            self.failed[name] = reason
            self.history.record("process_exited", process=f"streamlet-{name}", pid=proc.pid, exit_code=proc.returncode)
            if failures:
                self.history.record("query_failed", streamlet=name, pid=proc.pid, error=reason)
            exited.append(name)
        return exited

    def dead_driver(self) -> str | None:
        """For waits that cannot go on without every driver: why one is gone, or None."""
        for name in self.exited_drivers():
            why = self.failed[name].splitlines()[0]
            return f"streamlet {name} exited: {why} (see {self.drivers[name].record.log_path})"
        return None

    def start_generator(self, duration_s: float | None, seed: int | None = None) -> None:
        """Start producing: for `duration_s`, or until stop_generator() when None."""
        w = self.scenario.workload
        settings = WorkloadSettings(
            bootstrap_servers=self.client_access(GENERATOR).bootstrap_servers,
            kafka_security=self.kafka.security,
            topic=self.topic_name(w.topic),
            ack_log=str(self.ack_log),
            keys=w.keys,
            rate=w.rate,
            duration_s=duration_s,
            payload_bytes=w.payload_bytes,
            seed=w.seed if seed is None else seed,
            late_share=self.late_events.get("share", 0.0),
            late_by_s=self.late_events.get("late_by_s", 0.0),
            late_after=int(self.late_events.get("after_s", 0.0) * w.rate),
            resend_share=self.resend.get("share", 0.0),
            resend_after_s=self.resend.get("after_s", 0.0),
            idempotence=w.idempotence,
            codec=w.topic.codec,
            headers=w.headers,
            transaction_records=w.transaction_records,
            abort_every=w.abort_every,
            record=w.record,
            keeps=declared_filters(self.scenario.blueprint),
            dropped_dir=str(self.layout.dropped(GENERATOR).parent),
            workers=w.workers,
        )
        settings.save(self.layout.generator_settings)
        self.generator = self.supervisor.start(
            "generator",
            [sys.executable, "-m", "harness.workload.generator", str(self.layout.generator_settings)],
            self.layout.log("generator"),
            # this process's environment (a container's LD_LIBRARY_PATH, the locale, HOME) and the password
            env={**os.environ, **self.kafka.child_env()},
        )
        self.history.record("process_started", process="generator", pid=self.generator.pid, role="generator")

    def stop_generator(self, reason: str) -> None:
        """End a workload that has no end of its own: SIGTERM, after which the generator waits for the outcome
        of what it sent and exits (generator_done says when). Once; later calls do nothing."""
        if self.generator is None or self._generator_stopped:
            return
        self._generator_stopped = True
        self.history.record("workload_stopped", pid=self.generator.pid, reason=reason)
        self.generator.signal(signal.SIGTERM)

    def wait_generator(self, timeout: float = 120.0) -> None:
        """Until the generator has exited (its workload over, or stopped early), its exit recorded, whatever its
        exit code: nothing more is sent while the pipeline drains."""
        if self.generator is not None:
            wait_for(lambda: not self.generator.running(), timeout=timeout, interval=0.5, what="the generator to exit")
            try:
                self.generator_done()
            except HarnessError:
                pass  # a failed generator: recorded (process_exited, its exit code), its acknowledgements are evidence

    def generator_done(self) -> bool:
        """True once the generator has exited (recorded once); a failed generator stops the run."""
        if self.generator is None or self.generator.running():
            return False
        code = self.generator.wait_exit()
        if not self._generator_exit_recorded:
            self._generator_exit_recorded = True
            self.history.record("process_exited", process="generator", pid=self.generator.pid, exit_code=code)
        if code != 0:
            raise HarnessError(f"the generator failed with exit code {code} (see {self.generator.record.log_path})")
        return True

    def lags(self, log_ends: dict[tuple[str, int], int]) -> dict[str, int | None]:
        """Per running streamlet: records of its inputs not processed yet (None: no query started)."""
        lags = {}
        for name in self.scenario.blueprint.order():
            if name in self.failed or name not in self.progress:
                continue
            mine = set(self.input_topics(name))
            lags[name] = self.progress[name].poll().lag({tp: end for tp, end in log_ends.items() if tp[0] in mine})
        return lags

    def log_ends(self) -> dict[tuple[str, int], int]:
        with self.admin() as admin:
            return {
                (o.topic, o.partition): o.log_end for o in admin.offsets(self.topic_name(t) for t in self.all_topics())
            }

    def drain(self, timeout: float = 300.0) -> float:
        """Wait until every running streamlet has processed its inputs up to their log-end offsets. A deadline, not
        a wait: a drain takes seconds, but minutes where executors lost to faults come back on a busy machine."""
        t0 = time.monotonic()
        wait_for(self._caught_up, timeout=timeout, interval=0.25, what="the pipeline to drain")
        self.history.record("drained", failed=sorted(self.failed))
        return time.monotonic() - t0

    def stop_drivers(self, timeout: float = 120.0) -> tuple[dict, str | None]:
        """Stop the drivers in the data's order: first those that read no other streamlet's output, then each once
        the streamlets writing its inputs have stopped and it has read what they wrote. A stateful streamlet can
        still write after the drain: a batch without input, run because its watermark moved on, emits the windows it
        closed. The drivers of one step are stopped at once (SIGTERM to each, then one wait: one after the other, a
        driver's stop taking seconds, they added up). Returns streamlet -> exit code, and why a streamlet was stopped
        before it had read everything (None: none was)."""

        def stop(name: str) -> int | None:
            proc = self.drivers[name]
            if name in self.failed:
                return proc.returncode
            self.stopped.add(name)
            code = proc.stop(timeout=60)
            self.history.record(
                "process_stopped", process=f"streamlet-{name}", pid=proc.pid, signal="SIGTERM", exit_code=code
            )
            return code

        codes: dict[str, int | None] = {}
        behind = None
        remaining = list(self.drivers)
        while remaining:
            step = [n for n in remaining if not any(self._feeds(m, n) for m in remaining if m != n)] or remaining
            try:
                wait_for(
                    lambda: self._caught_up(step),
                    timeout=timeout,
                    interval=0.25,
                    what=f"{', '.join(step)} to read what was written to them",
                )
            except WaitTimeout as exc:
                behind = behind or str(exc)
            with ThreadPoolExecutor(max_workers=len(step), thread_name_prefix="stop") as pool:
                codes.update(zip(step, pool.map(stop, step)))
            remaining = [n for n in remaining if n not in step]
        return codes, behind

    def _feeds(self, writer: str, reader: str) -> bool:
        return bool(set(self.output_topics(writer)) & set(self.input_topics(reader)))

    def _caught_up(self, names: list[str] | None = None) -> bool:
        """Whether these streamlets (every one by default; those running) have read their inputs up to their
        log-end offsets now."""
        self.exited_drivers()
        ends = self.log_ends()  # read after the exits: a streamlet that failed is not waited for
        return all(lag == 0 for name, lag in self.lags(ends).items() if names is None or name in names)

    def start_recording(self) -> None:
        """Record every record of the intermediate topics as it is written (topics/<topic>.jsonl), from their
        first offset: the checker sees everything a hop carried even where retention (routine or a fault's) has
        deleted it since, and a run cut short keeps what it recorded. The source needs no recording: the
        generator's acknowledgement log has each record's partition and offset."""
        names = [self.topic_name(t) for t in self.scenario.blueprint.hops()]
        with self.admin() as admin:
            starts = {(o.topic, o.partition): o.log_start for o in admin.offsets(names)}
        columnar = frozenset(names) if self.scenario.recordings == COLUMNAR else frozenset()
        self.recorder = PartitionRecorder(
            self.kafka, starts, self.layout.topics, self.value_decoders(), columnar, self.output_identities()
        ).start()

    def record_new_partitions(self, topic: str) -> None:
        """After partitions were added to `topic`: the recording follows them too (from their first offset)."""
        if self.recorder is not None and topic in self.recorder.topics:
            with self.admin() as admin:
                self.recorder.follow({(o.topic, o.partition): o.log_start for o in admin.offsets([topic])})

    def wait_recorded(self, timeout: float = 120.0) -> None:
        """Until the recording holds every record the intermediate topics have now (their log-end offsets)."""
        if self.recorder is not None:
            self.recorder.wait_caught_up(self.log_ends(), timeout)

    def save_evidence(self) -> None:
        """After the drivers stopped: the topics' recording completed, the egresses' states exported, the
        PostgreSQL stores copied. A step that fails is recorded (evidence_incomplete) and the others still run;
        the first failure is raised once all have had their turn."""
        errors = []
        for step in (self.save_topics, self.export_states, self.save_stores, self.export_outputs):
            try:
                step()
            except Exception as exc:  # the evidence of the other steps is still worth keeping
                error = str(exc) or type(exc).__name__
                self.history.record("evidence_incomplete", step=step.__name__, error=error)
                errors.append(f"{step.__name__}: {error}")
        if errors:
            raise EvidenceIncomplete("; ".join(errors))

    def save_topics(self) -> None:
        """Complete the recording of the intermediate topics once nothing writes to them any more, and stop it."""
        if self.recorder is None:
            return
        self.wait_recorded()
        self.recorder.stop()
        self.history.record(
            "topics_recorded",
            topics=self.recorder.topics,
            records=self.recorder.records,
            missed=self.recorder.missed,
            renewals=self.recorder.renewals,
        )
        self.recorder = None

    def export_states(self, timeout: float = 300.0) -> None:
        """After the drivers stopped: each egress of your own exports its final state (pipelines/export.py), in a
        process of its own, so the checker can read it from a file. A failed export is recorded; the checker then
        finds no state and says what it cannot judge."""
        for name, inst in self.scenario.blueprint.streamlets.items():
            if inst.cls.egress_evidence != EXPORTED:
                continue
            path = self.layout.driver_settings(name)
            self.driver_settings(name).save(path)
            proc = launch_driver(
                self.supervisor,
                f"export-{name}",
                "pipelines.export",
                [str(path)],
                self.layout.log(f"export-{name}"),
                env=self.driver_env(),
                cwd=self.layout.spark_local(name).parent,
                python=self.prepare_spark().python,
            )
            code = proc.wait_exit(timeout)
            if code is None:
                proc.kill()
            self.history.record(
                "state_exported",
                streamlet=name,
                exit_code=code,
                path=str(self.layout.egress_state(name).relative_to(self.layout.root)),
            )
            if code != 0:
                self.say(f"exporting {name}'s state failed (exit code {code}): see {self.layout.log(f'export-{name}')}")

    def save_stores(self) -> None:
        """Copy each PostgreSQL egress's tables into the run directory: the checker reads files only."""
        if not self.scenario.store_url:
            return
        for name, inst in self.scenario.blueprint.streamlets.items():
            if inst.role == EGRESS and inst.runs:
                paths = self.driver_paths(name)
                copied = egress_store(paths, self.scenario.store_url).copy_to(egress_store(paths))
                self.history.record("store_copied", streamlet=name, rows=copied)

    def save_versions(self) -> None:
        import confluent_kafka
        import kafka

        spark = self.prepare_spark()
        versions = {
            "python": platform.python_version(),
            "pyspark": spark.version,  # the drivers' (cluster.spark.version, or the harness's own)
            "spark_kafka_connector": jars.connector_version(spark.jar_set, spark.connector_artifact),
            "spark_environment": "the harness's own" if spark.own else spark.python,
            "kafka_broker": self.cluster.kafka_version if self.cluster else "external",
            **({"kafka_image": self.cluster.image} if isinstance(self.cluster, ContainerCluster) else {}),
            "kafka_python": kafka.__version__,
            "confluent_kafka": confluent_kafka.version(),  # the generator's producer
            "librdkafka": confluent_kafka.libversion()[0],
        }
        self.layout.versions.write_text(json.dumps(versions, indent=2))

    def close(self) -> None:
        """Stop every process this run started (drivers, generator, brokers), whatever state it is in; a fault's
        thread still restarting one after this is refused."""
        if self._executor_watch is not None:
            self._executor_watch.stop()
        if self.recorder is not None:
            self.recorder.stop()  # what it recorded so far stays
        self.supervisor.close(timeout=30)
        if self.cluster is not None:
            self.cluster.close()
            self.cluster.forget_keys()
        if self.foreign_brokers is not None:
            self.foreign_brokers.close()
        self.history.record("run_ended")
        self.history.close()

    def __enter__(self) -> "PipelineRun":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def external_access(scenario: Scenario, namespace: str | None, workdir: Path) -> KafkaAccess:
    """How to reach the cluster one runs that `scenario` names (cluster.bootstrap_servers), as its kafka: section
    says, its secrets read now (a truststore's certificates written to `workdir`); topic changes held to
    `namespace`."""
    spec, client = scenario.cluster, scenario.kafka
    if client is None:
        return KafkaAccess(spec.bootstrap_servers, namespace=namespace)
    ca_file = client.ca_file
    if client.truststore:
        password = (
            client.truststore_password.resolve("kafka.truststore.password") if client.truststore_password else None
        )
        ca_file = str(truststore_pem(Path(client.truststore), password, workdir / "kafka-truststore.pem"))
    security = KafkaSecurity(
        client.security_protocol, client.sasl_mechanism, client.username, ca_file, client.keystore_file
    )
    password = client.password.resolve("kafka.password") if client.password else None
    return KafkaAccess(spec.bootstrap_servers, security, password, namespace=namespace)
