"""Kafka brokers as containers: the embedded cluster's layout and settings, its JVMs in containers.

The cluster directory is the embedded cluster's (configs, storage formatted by Kafka's tool, data), mounted
into every container at its own path; the containers use the host's network and listen on 127.0.0.1 ports,
as the embedded brokers do, so every fault and network link works unchanged. Each container carries labels
with the run and its cluster directory: the run's end, `harness cluster down` and `harness clean` remove
exactly those. Their logs (the brokers log to stdout) are kept in node-N/broker.log.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from harness.cluster.embedded import READY_TIMEOUT_S, Broker, EmbeddedCluster
from harness.docker import engine as docker_engine
from harness.docker.engine import CLUSTER_LABEL, NODE_LABEL, RUN_LABEL
from harness.errors import HarnessError
from harness.process import ManagedProcess, ProcessRecord
from harness.process.supervisor import start_ticks_of

KAFKA_CLASSPATH = "/opt/kafka/libs/*"  # in the image (docker/kafka/Dockerfile)
FREEZE_TRIES_S = 10.0  # how long a pause is tried again while runc cannot freeze the container


class ContainerProcess:
    """What a broker's container does for a fault: kill, stop, start, pause, resume, through the Docker SDK."""

    paused_by = "the cgroup freezer (docker pause)"
    name: str
    log_path: Path

    def container(self):
        raise NotImplementedError

    def _status(self) -> str | None:
        import docker.errors

        found = self.container()
        if found is None:
            return None
        try:
            found.reload()
        except docker.errors.NotFound:
            return None
        return found.status

    def running(self) -> bool:
        return self._status() in ("running", "paused", "restarting")

    def state(self) -> str:
        status = self._status()
        return "paused" if status == "paused" else "running" if status in ("running", "restarting") else "stopped"

    @property
    def pid(self) -> int | None:
        """The host's pid of the container's main process (the broker's JVM)."""
        if not self.running():
            return None
        return self.container().attrs["State"]["Pid"] or None

    def kill(self) -> None:
        """SIGKILL: the broker dies without flushing or leaving the cluster."""
        if self.running():
            self.container().kill(signal="SIGKILL")
            self._wait_status("exited", 30)

    def stop(self, timeout: float = 30.0) -> None:
        """Controlled shutdown (SIGTERM), SIGKILL after `timeout` (docker stop)."""
        if self.running():
            self.container().stop(timeout=int(timeout))

    def pause(self) -> None:
        """docker pause: every process of the container frozen, its sockets open, nothing answers.

        On cgroup v1, runc gives up ("unable to freeze") when the freezer does not settle within its few
        milliseconds, which a busy machine's JVM can cause; it thaws the container again, so the pause is
        tried again, for up to FREEZE_TRIES_S, before the fault fails."""
        import docker.errors

        if not self.running():
            raise HarnessError(f"cannot pause {self.name}: it is not running")
        deadline = time.monotonic() + FREEZE_TRIES_S
        while True:
            try:
                self.container().pause()
                return
            except docker.errors.APIError as exc:
                if "unable to freeze" not in str(exc) or time.monotonic() > deadline:
                    raise
            if self._status() == "paused":
                return
            time.sleep(0.2)

    def resume(self) -> None:
        if self._status() == "paused":
            self.container().unpause()

    def _wait_status(self, status: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self._status() not in (status, None) and time.monotonic() < deadline:
            time.sleep(0.1)

    def save_log(self, since: float | None = None) -> None:
        """The container's output (every start of it) into log_path."""
        found = self.container()
        if found is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self.log_path.write_bytes(found.logs(stdout=True, stderr=True, **({"since": int(since)} if since else {})))

    def exit_reason(self) -> str | None:
        if self.running():
            return None
        found = self.container()
        if found is None:
            return f"{self.name}: its container is gone"
        self.save_log()
        lines = [line for line in self.log_path.read_text(errors="replace").splitlines() if line.strip()]
        last = f": {lines[-1].strip()[:300]}" if lines else ""
        return f"{self.name} exited with code {found.attrs['State']['ExitCode']} (see {self.log_path}{last})"

    def sampled_process(self) -> ManagedProcess | None:
        """Its JVM as a process record, to sample its memory (never signalled through it)."""
        pid = self.pid
        if pid is None:
            return None
        return ManagedProcess(ProcessRecord(self.name, pid, start_ticks_of(pid) or 0, (), str(self.log_path)))


class ContainerBroker(ContainerProcess, Broker):
    """A node of a ContainerCluster: its container is created at its first start and kept until the cluster
    closes, so a kill or a stop is followed by a start of the same container, on the same data."""

    def __init__(self, cluster: "ContainerCluster", spec):
        super().__init__(cluster, spec)
        self._container = None

    @property
    def container_name(self) -> str:
        return f"{self.cluster.name_prefix}-{self.name}"

    def container(self):
        import docker.errors

        if self._container is None:
            try:
                self._container = self.cluster.engine.containers.get(self.container_name)
            except docker.errors.NotFound:
                return None
        return self._container

    def start(self, wait: bool = True, timeout: float = READY_TIMEOUT_S) -> None:
        if self.cluster.closed:
            raise HarnessError(f"{self.name}: the cluster is closed, nothing starts again")
        if self.running():
            raise HarnessError(f"{self.name} is already running (container {self.container_name})")
        import docker.errors

        try:
            (self.container() or self._create()).start()
        except docker.errors.ImageNotFound:
            raise HarnessError(
                f"{self.name}: no image {self.cluster.image} on the Docker engine (build it: `harness images build`)"
            ) from None
        except docker.errors.APIError as exc:
            raise HarnessError(
                f"{self.name}: the Docker engine refused to start {self.container_name}: {exc.explanation or exc}"
            ) from None
        if wait:
            self.cluster.wait_ready(timeout=timeout, node_ids=[self.node_id])

    def _create(self):
        workdir = str(self.cluster.workdir)
        self.scratch.mkdir(parents=True, exist_ok=True)  # its java.io.tmpdir, in the folder it shares
        self._container = self.cluster.engine.containers.create(
            self.cluster.image,
            command=self.java_arguments(KAFKA_CLASSPATH),
            name=self.container_name,
            labels={RUN_LABEL: self.cluster.run_id, CLUSTER_LABEL: workdir, NODE_LABEL: str(self.node_id)},
            network_mode="host",
            user=f"{os.getuid()}:{os.getgid()}",
            volumes={workdir: {"bind": workdir, "mode": "rw"}},
            detach=True,
        )
        return self._container


class ContainerCluster(EmbeddedCluster):
    """1 or 3 KRaft nodes as containers of the harness's Kafka image (harness.docker.images)."""

    broker_class = ContainerBroker
    runtime = "docker"

    def __init__(
        self,
        workdir: Path,
        cluster_id: str,
        nodes,
        heap_mb: int,
        kafka_version: str,
        image: str = "",
        run_id: str = "",
        security=None,
        features: dict[str, int] | None = None,
    ):
        self.image = image
        self.run_id = run_id or Path(workdir).resolve().name
        self.closed = False
        self._engine = None
        super().__init__(workdir, cluster_id, nodes, heap_mb, kafka_version, security, features)

    @property
    def engine(self):
        if self._engine is None:
            self._engine = docker_engine.client()
        return self._engine

    @property
    def name_prefix(self) -> str:
        """Unique on the engine: the run's id and the cluster's."""
        return "harness-" + re.sub(r"[^a-zA-Z0-9_.-]", "-", f"{self.run_id}-{self.cluster_id[:6]}").lower()

    def options(self) -> dict:
        return {**super().options(), "image": self.image, "run_id": self.run_id}

    def processes(self) -> list[ManagedProcess]:
        return [proc for broker in self.brokers if (proc := broker.sampled_process()) is not None]

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM to every broker container at once (one by one, the last would wait for a quorum already
        gone), SIGKILL to any still running after `timeout`; their logs saved."""
        running = [b for b in self.brokers if b.running()]
        for broker in running:
            broker.resume()
            broker.container().kill(signal="SIGTERM")
        deadline = time.monotonic() + timeout
        for broker in running:
            broker._wait_status("exited", max(0.0, deadline - time.monotonic()))
            broker.kill()
        for broker in self.brokers:
            broker.save_log()

    def close(self, timeout: float = 20.0) -> None:
        """Stop every broker and remove its container; a fault's thread starting one afterwards is refused."""
        self.closed = True
        self.stop(timeout)
        for broker in self.brokers:
            if broker.container() is not None:
                broker.container().remove(force=True)
                broker._container = None


def remove_containers(cluster_dir: Path) -> list[str]:
    """Remove the containers of the cluster in `cluster_dir` (by label, whatever state they are in), their logs
    saved in its node folders first: `harness clean` after a harness that was killed. Returns their names."""
    cluster_dir = Path(cluster_dir).resolve()
    engine = docker_engine.client()
    removed = []
    for found in engine.containers.list(all=True, filters={"label": f"{CLUSTER_LABEL}={cluster_dir}"}):
        log = cluster_dir / f"node-{found.labels.get(NODE_LABEL, 'unknown')}" / "broker.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_bytes(found.logs(stdout=True, stderr=True))
        found.remove(force=True)
        removed.append(found.name)
    return removed
