"""What the faults on a broker share: finding it in the embedded cluster by its target name (`broker-2`)."""

from __future__ import annotations

from harness.errors import HarnessError
from harness.faults.target import Pipeline


def broker_node(target: str) -> int:
    """`broker-2` -> 2."""
    return int(target.split("-", 1)[1])


def broker(run: Pipeline, kind: str, target: str):
    if run.cluster is None:
        raise HarnessError(f"{kind}: broker faults need the embedded cluster")
    return run.cluster.broker(broker_node(target))
