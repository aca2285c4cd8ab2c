"""The run's Spark: the drivers' Spark (the harness's own or the scenario's version), the standalone cluster a
scenario asks for, each driver's configuration and environment, and the one way a driver process is launched."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from contract.applications import APPLICATION
from harness.evidence.history import PROCESS_STARTED, REQUIREMENTS_INSTALLED
from harness.process import ManagedProcess
from harness.runner.executors import ExecutorWatch
from harness.runner.kafka_service import KafkaService
from harness.runner.shared import RunShared
from harness.secrets import split_password
from harness.spark import packages
from harness.spark.launcher import launch_driver
from harness.spark.requirements import install
from harness.spark.session import launcher_env, session_conf
from harness.spark.standalone import StandaloneCluster, executor_conf
from harness.spark.versions import SparkRuntime, ensure

OWN_PACKAGES = str(Path(__file__).resolve().parents[2])  # where harness, pipelines and contract are imported from


class SparkService:
    """The Spark side of one run: what every driver is started with."""

    def __init__(self, shared: RunShared, kafka: KafkaService):
        self.shared = shared
        self.kafka = kafka
        self.cluster: StandaloneCluster | None = None  # cluster.spark.master: standalone
        self._executor_watch: ExecutorWatch | None = None
        self.runtime: SparkRuntime | None = None  # the drivers' Spark (prepare)
        self.requirements: dict[str, Path] = {}  # an application -> where its own requirements are installed
        self._conf: dict[type, dict[str, str]] = {}

    def start(self) -> None:
        """The Spark standalone cluster the scenario asks for (master and workers), before any driver."""
        spec = self.shared.scenario.cluster
        if not spec.spark_standalone:
            if spec.spark_master != "local":
                self.shared.say(
                    f"Spark master {spec.spark_master}: only the applications named "
                    f"harness-{self.shared.run_id}-* are this run's"
                )
            return
        t0 = time.monotonic()
        self.cluster = StandaloneCluster(
            self.shared.supervisor, self.shared.layout.spark_cluster, self.shared.layout.log_dir, spec.spark_workers
        ).start()
        for proc in [self.cluster.master, *self.cluster.worker_procs.values()]:
            self.shared.history.record(
                PROCESS_STARTED, process=proc.name, pid=proc.pid, role=proc.name.rsplit("-", 1)[0]
            )
        apps = {self.app_name(name): name for name in self.shared.scenario.blueprint.streamlets}
        self._executor_watch = ExecutorWatch(self.cluster, apps, self.shared.history).start()
        self.shared.say(
            f"Spark standalone: master {self.cluster.master_url}, {spec.spark_workers} worker(s) "
            f"({time.monotonic() - t0:.1f}s)"
        )

    def master(self) -> str | None:
        """The drivers' master URL; None: each runs local[1] (DriverSettings' default)."""
        if self.cluster is not None:
            return self.cluster.master_url
        master = self.shared.scenario.cluster.spark_master
        return None if master == "local" else master

    def app_name(self, name: str) -> str:
        """A streamlet's Spark application name: on a cluster, the run's id keeps its applications apart."""
        return f"streamlet-{name}" if self.master() is None else f"harness-{self.shared.run_id}-{name}"

    def cluster_conf(self) -> dict[str, str]:
        """What a driver adds on a Spark cluster: its executor (standalone.executor_conf), running this Python with
        the streamlets importable."""
        if self.master() is None:
            return {}
        paths = [OWN_PACKAGES, *self.shared.scenario.import_paths]
        return {
            **executor_conf(),
            "spark.pyspark.python": sys.executable,
            "spark.executorEnv.PYTHONPATH": os.pathsep.join(paths),
            "spark.executorEnv.PYTHONDONTWRITEBYTECODE": "1",
        }

    def prepare(self) -> SparkRuntime:
        """The drivers' Spark: the harness's own, or the scenario's cluster.spark.version, its environment built and
        its connector and the jar sets the streamlets need fetched first if missing."""
        if self.runtime is None:
            streamlets = self.shared.scenario.blueprint.streamlets.values()
            jar_sets = tuple(dict.fromkeys(pom for inst in streamlets for pom in inst.cls.spark_jars))
            self.runtime = ensure(self.shared.scenario.cluster.spark_version, self.shared.say, jar_sets)
            self._serve_applications()
        return self.runtime

    def _serve_applications(self) -> None:
        """What each application asks for, before anything starts: its packages (fetched once, or refused), its own
        requirements (installed, or found installed)."""
        for name, inst in self.shared.scenario.blueprint.streamlets.items():
            if inst.kind != APPLICATION:
                continue
            named = inst.settings.get("packages") or ()
            if named:
                packages.serve([p for text in named for p in packages.parse(text, f"applications.{name}.packages")])
            lines = inst.settings.get("requirements")
            if lines:
                done = install(
                    tuple(lines), self.runtime.python, self.runtime.version, f"applications.{name}.requirements"
                )
                self.requirements[name] = done.folder
                self.shared.history.record(
                    REQUIREMENTS_INSTALLED,
                    application=name,
                    folder=str(done.folder),
                    installed=list(done.packages),
                    took_s=done.took_s,
                    cached=done.cached,
                )
                how = "found installed" if done.cached else "installed"
                count = len(done.packages)
                self.shared.say(f"{name}: its requirements {how} in {done.took_s:.1f}s ({count} package(s))")

    def conf(self, cls) -> dict[str, str]:
        """A driver's Spark configuration: the connector, the jar sets and settings its class declares (checks
        the connector and Java once)."""
        if cls not in self._conf:
            self._conf[cls] = session_conf(cls.spark_conf, cls.spark_jars, self.prepare())
        return self._conf[cls]

    def driver_env(self) -> dict[str, str]:
        password = split_password(self.shared.scenario.store_url)[1]
        env = {"PGPASSWORD": password} if password else {}  # the settings file holds no password
        # No byte-code cache written beside a user's code (the harness's own and pyspark's, compiled at install, are
        # still read): a run leaves a team's folders as it found them.
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.update(self.kafka.kafka.child_env())  # nor the Kafka user's
        env.update(launcher_env(self.prepare()))
        paths = [*filter(None, [self.prepare().pythonpath()]), *self.shared.scenario.import_paths]
        if paths:  # another Spark's environment finds the project there; a user's streamlet (and its UDFs) theirs
            # The harness's own packages first, as in this process (pipelines/kinds.py add_import_paths): a user's
            # folder holding a package named pipelines or harness must not shadow them in a driver or its workers.
            env["PYTHONPATH"] = os.pathsep.join([OWN_PACKAGES, *filter(None, [os.environ.get("PYTHONPATH")]), *paths])
        return env

    def launch(self, process: str, module: str, streamlet: str) -> ManagedProcess:
        """Start `module` (pipelines.driver, pipelines.export) as process `process` on streamlet `streamlet`'s saved
        driver settings, in its working directory, logging to logs/<process>.log."""
        return launch_driver(
            self.shared.supervisor,
            process,
            module,
            [str(self.shared.layout.driver_settings(streamlet))],
            self.shared.layout.log(process),
            env=self.driver_env(),
            cwd=self.shared.layout.spark_local(streamlet).parent,
            python=self.prepare().python,
        )

    def versions(self) -> dict[str, str]:
        """The drivers' Spark and connector versions for versions.json."""
        spark = self.prepare()
        return {
            "pyspark": spark.version,  # the drivers' (cluster.spark.version, or the harness's own)
            "spark_kafka_connector": spark.connector_version(),
            "spark_environment": "the harness's own" if spark.own else spark.python,
        }

    def close(self) -> None:
        if self._executor_watch is not None:
            self._executor_watch.stop()
