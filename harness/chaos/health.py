"""Whether a cluster shared between runs is as the next run should find it: every broker it had is live, no
partition is offline or under-replicated, no broker container it lists is paused or stopped. `harness explore`
asks before each run on a cluster one runs, so that one run's faults cannot leak into the next and make a
false counterexample."""

from __future__ import annotations

import time

from kafka.errors import KafkaError

from harness.cluster.access import KafkaAccess
from harness.cluster.admin import KafkaAdmin
from harness.errors import HarnessError


def live_brokers(access: KafkaAccess) -> int:
    """How many brokers the cluster lists now (what a healthy cluster has, taken before the first run)."""
    with KafkaAdmin(access) as admin:
        return len(admin.live_broker_ids())


def health_problems(access: KafkaAccess, brokers: int, containers: tuple[str, ...] = ()) -> list[str]:
    """What is wrong with the cluster, a line each; empty when it is healthy."""
    try:
        with KafkaAdmin(access, request_timeout_ms=5000, connect_timeout_ms=3000) as admin:
            live = len(admin.live_broker_ids())
            problems = [f"{live} of {brokers} brokers live"] if live < brokers else []
            problems += admin.unhealthy_partitions()
    except (HarnessError, KafkaError, OSError) as exc:
        problems = [f"the cluster does not answer: {exc}"]
    if containers:
        from harness.docker import engine

        client = engine.client()
        for name in containers:
            status = client.containers.get(name).status
            if status != "running":
                problems.append(f"container {name} is {status}")
    return problems


class SharedCluster:
    """A cluster one runs, shared by the runs of a search: each run starts once it is healthy, or not at all."""

    def __init__(self, access: KafkaAccess, containers: tuple[str, ...], settle_s: float):
        self.access, self.containers, self.settle_s = access, containers, settle_s
        self.brokers = live_brokers(access)  # as many as a healthy cluster has

    def describe(self) -> str:
        containers = f", containers {', '.join(self.containers)} running" if self.containers else ""
        return (
            f"runs share the cluster at {self.access.describe()}: each starts once it is healthy "
            f"({self.brokers} broker(s) live, every partition in sync{containers}), or is discarded after "
            f"{self.settle_s:g}s"
        )

    def unhealthy(self) -> list[str]:
        """What is still wrong after waiting up to settle_s (empty: the next run may start)."""
        return wait_healthy(self.access, self.brokers, self.containers, self.settle_s)


def wait_healthy(
    access: KafkaAccess, brokers: int, containers: tuple[str, ...] = (), timeout_s: float = 60.0
) -> list[str]:
    """Until the cluster is healthy or `timeout_s` has passed: what is still wrong (empty: healthy)."""
    deadline = time.monotonic() + timeout_s
    while True:
        problems = health_problems(access, brokers, containers)
        if not problems or time.monotonic() >= deadline:
            return problems
        time.sleep(2.0)
