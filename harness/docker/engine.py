"""The Docker engine, through the Docker SDK: one line when none answers."""

from __future__ import annotations

import os

from harness.errors import HarnessError

# Every container the harness starts carries these labels; `harness clean` and a run's end remove by them.
RUN_LABEL = "harness.run"
CLUSTER_LABEL = "harness.cluster"  # the cluster directory, resolved: one run's containers, exactly
NODE_LABEL = "harness.node"


def client():
    """A client of the engine DOCKER_HOST names (the local socket by default), checked to answer."""
    import docker.errors

    import docker

    try:
        engine = docker.from_env(timeout=120)
        engine.ping()
        return engine
    except docker.errors.DockerException as exc:
        where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
        reason = str(exc).split("(")[0].strip().rstrip(":")
        raise HarnessError(f"no Docker engine answers at {where} ({reason}): start one (harness docs docker)") from None
