"""What each fault target (harness/faults/kind.py TARGETS) means in a scenario: the names it can take in this
pipeline and cluster, and why a name is not one of them. One entry per target, so a new target is one entry."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from contract.roles import INGRESS
from harness.faults import FaultKind
from harness.faults.kind import GENERATOR
from harness.scenario.blueprint import Blueprint


@dataclass(frozen=True)
class Target:
    names: Callable[[Blueprint, object], list[str]]  # (blueprint, cluster spec) -> every name this target can take
    wrong: Callable[[FaultKind, str, Blueprint, object], str | None]  # why a name is not one (None: it is)


def _numbered(prefix: str, count: Callable[[object], int], what: Callable[[object], str]) -> Target:
    """`broker-2` of 3 brokers, `worker-1` of 2 workers."""

    def names(blueprint: Blueprint, cluster) -> list[str]:
        return [f"{prefix}-{n}" for n in range(1, count(cluster) + 1)]

    def wrong(fault: FaultKind, target: str, blueprint: Blueprint, cluster) -> str | None:
        if target in names(blueprint, cluster):
            return None
        return (
            f"{fault.name} needs a {what(cluster)} ({', '.join(names(blueprint, cluster)) or 'none'}), got {target!r}"
        )

    return Target(names, wrong)


def _running(s) -> bool:
    return s.runs


def _output(fault: FaultKind, name: str, s) -> str:
    return f"{fault.name} needs a streamlet or application, {name!r} is an output (read by the harness, not run)"


def _streamlets(kind_of: Callable[[object], bool] = _running, not_one=_output, link: bool = False) -> Target:
    """Streamlets of the blueprint that run (those `kind_of` accepts; `not_one(fault, name, streamlet)` says why
    another is not one), and with `link` the generator's network link too."""

    def names(blueprint: Blueprint, cluster) -> list[str]:
        return [n for n, s in blueprint.streamlets.items() if kind_of(s)] + ([GENERATOR] if link else [])

    def wrong(fault: FaultKind, target: str, blueprint: Blueprint, cluster) -> str | None:
        if link and target == GENERATOR:
            return None
        if target not in blueprint.streamlets:
            also = f" or {GENERATOR}" if link else ""
            return f"unknown streamlet {target!r} (declared: {', '.join(blueprint.streamlets)}{also})"
        streamlet = blueprint.streamlets[target]
        return None if kind_of(streamlet) else not_one(fault, target, streamlet)

    return Target(names, wrong)


RULES: dict[str, Target] = {
    "streamlet": _streamlets(),
    "processor": _streamlets(
        lambda s: s.kind == "processor",
        lambda fault, name, s: f"{fault.name} needs a streamlet of kind processor, {name!r} is {s.kind}",
    ),
    "ingress": _streamlets(
        lambda s: s.role == INGRESS,
        lambda fault, name, s: (
            f"{fault.name} needs a streamlet reading the source topic, {name!r} reads a topic of the pipeline"
        ),
    ),
    "broker": _numbered(
        "broker",
        lambda c: c.faultable_brokers,
        lambda c: "container of cluster.docker.containers" if c.containers else "broker of the embedded cluster",
    ),
    "link": _streamlets(link=True),
    "generator": Target(
        lambda blueprint, cluster: [GENERATOR],
        lambda fault, target, blueprint, cluster: (
            None if target == GENERATOR else f"{fault.name} targets the workload's {GENERATOR}, got {target!r}"
        ),
    ),
    "worker": _numbered("worker", lambda c: c.spark_workers, lambda c: "worker of the Spark standalone cluster"),
}
