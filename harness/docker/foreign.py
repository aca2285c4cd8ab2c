"""Broker containers of a cluster one runs (a compose stack): faulted by name, nothing else touched.

Only the containers a scenario lists in cluster.docker.containers are looked up, in that order (broker-1 is the
first); the harness never creates, removes or reconfigures them. At the run's end any it left paused or stopped
is running again, as it found it, and its log since the run began is kept in the run directory.
"""

from __future__ import annotations

import time
from pathlib import Path

from kafka.errors import KafkaError

from harness.cluster.access import KafkaAccess
from harness.cluster.admin import KafkaAdmin
from harness.docker import engine as docker_engine
from harness.docker.cluster import ContainerProcess
from harness.errors import HarnessError
from harness.waiting import wait_for


class ForeignBroker(ContainerProcess):
    def __init__(self, brokers: "ForeignBrokers", index: int, container):
        self.brokers = brokers
        self.node_id = index
        self._container = container
        self.container_name = container.name

    @property
    def name(self) -> str:
        return f"broker-{self.node_id}"

    @property
    def log_path(self) -> Path:
        return self.brokers.log_dir / f"{self.name}-{self.container_name}.log"

    def container(self):
        return self._container

    def start(self, wait: bool = True, timeout: float = 60.0) -> None:
        if self.brokers.closed:
            raise HarnessError(f"{self.name}: the run is over, its container is left as it is")
        self._container.start()
        if wait:
            self.wait_ready(timeout)

    def wait_ready(self, timeout: float = 60.0) -> None:
        self.brokers.wait_ready(timeout=timeout)


class ForeignBrokers:
    """The listed containers, checked to exist and run before anything starts."""

    kafka_version = "external"

    def __init__(self, names: tuple[str, ...], access: KafkaAccess, log_dir: Path):
        import docker.errors

        self.access, self.log_dir, self.closed = access, Path(log_dir), False
        engine = docker_engine.client()
        self.brokers = []
        for index, name in enumerate(names, start=1):
            try:
                found = engine.containers.get(name)
            except docker.errors.NotFound:
                raise HarnessError(
                    f"cluster.docker.containers: no container named {name!r} on the Docker engine"
                ) from None
            if found.status != "running":
                raise HarnessError(f"cluster.docker.containers: container {name!r} is {found.status}, not running")
            self.brokers.append(ForeignBroker(self, index, found))
        self.since = time.time()
        with KafkaAdmin(access) as admin:
            self.live = len(admin.live_broker_ids())  # what wait_ready waits for again after a restart

    def broker(self, node_id: int) -> ForeignBroker:
        return self.brokers[node_id - 1]

    def describe(self) -> str:
        return ", ".join(f"{b.name} = container {b.container_name}" for b in self.brokers)

    def wait_ready(self, timeout: float = 60.0, node_ids=None) -> None:
        """Until the cluster lists as many live brokers as it had when the run began (its node ids are its own)."""

        def listed() -> bool:
            try:
                with KafkaAdmin(self.access, request_timeout_ms=3000, connect_timeout_ms=2000) as admin:
                    return len(admin.live_broker_ids()) >= self.live
            except (HarnessError, KafkaError, OSError):  # not back yet: ask again
                return False

        wait_for(
            listed, timeout=timeout, interval=0.5, what=f"{self.live} live brokers at {self.access.bootstrap_servers}"
        )

    def processes(self) -> list:
        return []  # not the harness's: their memory is not sampled

    def close(self) -> None:
        """Leave every listed container running, as found; keep each one's log since the run began."""
        for broker in self.brokers:
            broker.resume()
            if not broker.running():
                broker.start(wait=False)
            broker.save_log(since=self.since)
        self.closed = True
