"""Blueprints: which streamlets run and which topics connect their outlets to inlets.

Parsed from the `blueprint` section of a scenario and validated before any
process starts. Each problem is reported with the field path it is about.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from contract.applications import OUTPUT_KINDS
from contract.roles import EGRESS, INGRESS, PROCESSOR
from harness.jars import shipped_sets
from harness.scenario.declared import BLUEPRINT, STREAMLET, TOPIC
from harness.scenario.fields import BlueprintError
from pipelines.kinds import KindError, load_kind, resolve_settings
from pipelines.model import Streamlet


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int = 2
    replication: int = 1
    config: dict = field(default_factory=dict)
    codec: str = "json"  # how its record values are encoded (pipelines.model.CODECS)


@dataclass(frozen=True)
class StreamletInstance:
    name: str
    kind: str  # as the blueprint names it: a built-in name or package.module:Class
    cls: type[Streamlet]
    settings: dict  # every setting the class declares, defaults filled in

    @property
    def runs(self) -> bool:
        """Whether the harness runs a driver for it: an output is read where an application writes, not run."""
        return self.kind not in OUTPUT_KINDS

    @property
    def role(self) -> str:
        """ingress (reads the source topic), egress (no outlets) or processor."""
        return INGRESS if self.cls.reads_source else EGRESS if not self.cls.shape.outlets else PROCESSOR


@dataclass(frozen=True)
class Connection:
    """One outlet feeding one or more inlets through one topic."""

    outlet: tuple[str, str]  # (streamlet, port)
    inlets: tuple[tuple[str, str], ...]
    topic: TopicSpec


@dataclass(frozen=True)
class Blueprint:
    streamlets: dict[str, StreamletInstance]
    connections: tuple[Connection, ...]

    def inputs_of(self, streamlet: str) -> dict[str, TopicSpec]:
        """inlet name -> topic feeding it"""
        return {port: c.topic for c in self.connections for (s, port) in c.inlets if s == streamlet}

    def outputs_of(self, streamlet: str) -> dict[str, TopicSpec]:
        """outlet name -> topic it writes"""
        return {c.outlet[1]: c.topic for c in self.connections if c.outlet[0] == streamlet}

    def topics(self) -> list[TopicSpec]:
        return [c.topic for c in self.connections]

    def order(self) -> list[str]:
        """Streamlets from the ingress to the egresses (a topological order)."""
        return topological_order(self)

    def hops(self) -> list[TopicSpec]:
        """The intermediate topics in pipeline order."""
        rank = {name: i for i, name in enumerate(self.order())}
        return [c.topic for c in sorted(self.connections, key=lambda c: rank[c.outlet[0]])]


def _port_ref(value: Any, path: str) -> tuple[str, str]:
    if not isinstance(value, str) or value.count(".") != 1 or not all(value.split(".")):
        raise BlueprintError(path, f"expected 'streamlet.port', got {value!r}")
    streamlet, port = value.split(".")
    return streamlet, port


def _mapping(value: Any, path: str) -> dict:
    if not isinstance(value, dict):
        raise BlueprintError(path, f"expected a mapping, got {type(value).__name__}")
    return value


def _given(raw: Any, path: str) -> dict:
    """A mapping's fields that have a value (`settings:` left empty is no settings)."""
    return {k: v for k, v in _mapping(raw if raw is not None else {}, path).items() if v is not None}


def topic_spec(raw: Any, default_name: str, path: str) -> TopicSpec:
    """A topic's spec from its YAML form, read as workload.topic is (declared.TOPIC); named `default_name` unless it
    names itself."""
    values = TOPIC.read(_given(raw, path), path)
    name = values["name"] if raw and "name" in raw else default_name
    if not name:
        raise BlueprintError(f"{path}.name", f"expected a topic name, got {name!r}")
    config = {str(k): str(v) for k, v in values["config"].items()}
    return TopicSpec(name, values["partitions"], values["replication"], config, values["codec"])


def _streamlet(name: str, raw: Any, path: str) -> StreamletInstance:
    values = STREAMLET.read(_given(raw, path), path)
    kind = values["kind"]
    try:
        cls = load_kind(kind)
    except KindError as exc:
        raise BlueprintError(f"{path}.kind", str(exc)) from None
    missing = [name for name in cls.spark_jars if name not in shipped_sets()]
    if missing:
        raise BlueprintError(
            f"{path}.kind",
            f"{kind} needs the jar set {missing[0]!r}, which the harness does not have "
            f"(jars/: {', '.join(shipped_sets())})",
        )
    merged, at_fault, problem = resolve_settings(cls, values["settings"], kind)
    if at_fault is not None:
        raise BlueprintError(f"{path}.settings.{at_fault}", problem)
    return StreamletInstance(name, kind, cls, merged)


def parse_blueprint(raw: Any, path: str = "blueprint") -> Blueprint:
    """Build and validate a Blueprint from its YAML form (see scenarios/ for examples)."""
    values = BLUEPRINT.read(_given(_mapping(raw, path), path), path)
    streamlets_raw, topics_raw, connections_raw = values["streamlets"], values["topics"], values["connections"]
    if not streamlets_raw:
        raise BlueprintError(f"{path}.streamlets", "no streamlets")
    streamlets = {name: _streamlet(name, body, f"{path}.streamlets.{name}") for name, body in streamlets_raw.items()}

    connections = []
    fed_by: dict[tuple[str, str], str] = {}
    for outlet_ref, targets in connections_raw.items():
        cpath = f"{path}.connections.{outlet_ref}"
        src_name, src_port, outlet = _resolve_port(streamlets, outlet_ref, "outlet", cpath)
        if not isinstance(targets, list) or not targets:
            raise BlueprintError(cpath, "expected a non-empty list of 'streamlet.inlet'")
        inlets = []
        for target in targets:
            dst_name, dst_port, inlet = _resolve_port(streamlets, target, "inlet", cpath)
            if inlet.schema != outlet.schema:
                raise BlueprintError(
                    cpath,
                    f"schema mismatch: {outlet_ref} writes {outlet.schema.id} but {target} reads {inlet.schema.id}",
                )
            if (dst_name, dst_port) in fed_by:
                raise BlueprintError(cpath, f"inlet {target} is already fed by {fed_by[(dst_name, dst_port)]}")
            fed_by[(dst_name, dst_port)] = outlet_ref
            inlets.append((dst_name, dst_port))
        topic = topic_spec(topics_raw.get(outlet_ref), outlet_ref.replace(".", "-"), f"{path}.topics.{outlet_ref}")
        for ref, port in ((outlet_ref, outlet), *((f"{s}.{p}", streamlets[s].cls.shape.inlet(p)) for s, p in inlets)):
            if port.codec is not None and port.codec != topic.codec:
                raise BlueprintError(
                    f"{path}.topics.{outlet_ref}.codec", f"{ref} is declared {port.codec}, the topic is {topic.codec}"
                )
        connections.append(Connection((src_name, src_port), tuple(inlets), topic))

    for ref in topics_raw:
        if ref not in connections_raw:
            raise BlueprintError(f"{path}.topics.{ref}", "names no connected outlet")
    for name, inst in streamlets.items():
        for inlet in inst.cls.shape.inlets:
            if (name, inlet.name) not in fed_by:
                raise BlueprintError(f"{path}.connections", f"inlet {name}.{inlet.name} is not connected")
    names = [c.topic.name for c in connections]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate:
        raise BlueprintError(f"{path}.topics", f"topic {duplicate!r} is written by two outlets")
    if not any(inst.role == INGRESS for inst in streamlets.values()):
        raise BlueprintError(f"{path}.streamlets", "no ingress: nothing reads the workload's source topic")
    blueprint = Blueprint(streamlets, tuple(connections))
    topological_order(blueprint, path)
    return blueprint


def _resolve_port(streamlets: dict[str, StreamletInstance], ref: Any, direction: str, path: str):
    """'streamlet.port' -> (streamlet, port, Inlet or Outlet), or an error naming what is wrong."""
    name, port = _port_ref(ref, path)
    if name not in streamlets:
        raise BlueprintError(path, f"unknown streamlet {name!r} (declared: {', '.join(streamlets)})")
    shape = streamlets[name].cls.shape
    found = shape.inlet(port) if direction == "inlet" else shape.outlet(port)
    if found is None:
        ports = shape.inlets if direction == "inlet" else shape.outlets
        raise BlueprintError(
            path,
            f"streamlet {name!r} ({streamlets[name].kind}) has no {direction} {port!r} "
            f"({direction}s: {', '.join(p.name for p in ports) or 'none'})",
        )
    return name, port, found


def topological_order(blueprint: Blueprint, path: str = "blueprint") -> list[str]:
    """The streamlets from the ingress on; a cycle is an error naming `path`."""
    downstream = {name: set() for name in blueprint.streamlets}
    for c in blueprint.connections:
        for dst, _ in c.inlets:
            downstream[c.outlet[0]].add(dst)
    order, state = [], {}

    def visit(node: str, trail: list[str]) -> None:
        if state.get(node) == "done":
            return
        if state.get(node) == "visiting":
            cycle = trail[trail.index(node) :] + [node]
            raise BlueprintError(f"{path}.connections", f"cycle: {' -> '.join(cycle)}")
        state[node] = "visiting"
        for nxt in sorted(downstream[node]):
            visit(nxt, trail + [node])
        state[node] = "done"
        order.append(node)

    for name in blueprint.streamlets:
        visit(name, [])
    return list(reversed(order))
