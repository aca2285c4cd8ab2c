"""The cluster a user starts and stops by hand (`harness cluster up|status|down`): its brokers as processes, or
as containers."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from harness.cluster import EmbeddedCluster
from harness.cluster.security import ClusterSecurity
from harness.docker.cluster import ContainerCluster


def bring_up(
    cluster_dir: Path,
    brokers: int,
    in_containers: bool,
    security: ClusterSecurity | None,
    user: str | None,
    password: str | None,
    say: Callable[[str], None],
    kafka_version: str | None = None,
) -> EmbeddedCluster:
    """Create the cluster in `cluster_dir` (its processes of Kafka `kafka_version`, the harness's own if None),
    start its brokers and wait until they answer, with a SCRAM `user` if given; on any failure nothing it started
    is left, process or container."""
    if in_containers:
        from harness.docker import engine, images

        image = images.ensure_kafka(engine.client(), say=say, version=kafka_version)
        cluster = ContainerCluster.create(
            cluster_dir, brokers=brokers, image=image, security=security, kafka_version=kafka_version
        )
    else:
        cluster = EmbeddedCluster.create(cluster_dir, brokers=brokers, security=security, kafka_version=kafka_version)
    try:
        cluster.start()
        if user:
            cluster.add_scram_user(user, password)
    except BaseException:
        cluster.close()
        raise
    return cluster


def attach(cluster_dir: Path) -> EmbeddedCluster:
    """The cluster in `cluster_dir`, whichever way its brokers run."""
    runtime = EmbeddedCluster.runtime_of(cluster_dir)
    return (ContainerCluster if runtime == ContainerCluster.runtime else EmbeddedCluster).attach(cluster_dir)
