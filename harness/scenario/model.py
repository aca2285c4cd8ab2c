"""Scenario files (YAML): the blueprint, the workload, the egress store and the cluster.

Every problem is reported as `FILE: field.path: what was expected`, before
anything starts. Unknown fields are errors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.errors import HarnessError
from pipelines.blueprint import Blueprint, BlueprintError, TopicSpec, parse_blueprint
from pipelines.settings import SourceOptions


class ScenarioError(HarnessError):
    pass


@dataclass(frozen=True)
class ClusterSpec:
    brokers: int = 1
    bootstrap_servers: str | None = None  # an external cluster; None: start an embedded one


@dataclass(frozen=True)
class WorkloadSpec:
    topic: TopicSpec
    keys: int = 8
    rate: float = 200.0
    duration_s: float = 30.0
    payload_bytes: int = 64
    late_share: float = 0.0
    late_by_s: float = 0.0
    late_after_s: float = 0.0  # late events start this long into the run
    idempotence: bool = True
    seed: int = 1


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    blueprint: Blueprint
    workload: WorkloadSpec
    cluster: ClusterSpec = field(default_factory=ClusterSpec)
    store_url: str | None = None
    source_options: dict[str, SourceOptions] = field(default_factory=dict)  # per streamlet
    raw: dict = field(default_factory=dict)  # the parsed file, for the run directory

    def options_for(self, streamlet: str) -> SourceOptions:
        return self.source_options.get(streamlet, SourceOptions())


class _Fields:
    """Typed access to one mapping of the file, naming the path in every error."""

    def __init__(self, raw: Any, path: str, allowed: set[str]):
        if not isinstance(raw, dict):
            raise BlueprintError(path, f"expected a mapping, got {type(raw).__name__}")
        unknown = sorted(set(raw) - allowed)
        if unknown:
            raise BlueprintError(f"{path}.{unknown[0]}", f"unknown field (expected one of {', '.join(sorted(allowed))})")
        self.raw, self.path = raw, path

    def get(self, key: str, kind, default=None, minimum=None, maximum=None, required=False):
        if key not in self.raw:
            if required:
                raise BlueprintError(f"{self.path}.{key}", "required field is missing")
            return default
        value = self.raw[key]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if isinstance(value, bool) and bool not in kinds or not isinstance(value, kinds):
            names = " or ".join(k.__name__ for k in kinds)
            raise BlueprintError(f"{self.path}.{key}", f"expected {names}, got {value!r}")
        if minimum is not None and value < minimum or maximum is not None and value > maximum:
            raise BlueprintError(f"{self.path}.{key}", f"expected a value from {minimum} to {maximum}, got {value!r}")
        return value


def _workload(raw: Any) -> WorkloadSpec:
    f = _Fields(raw, "workload", {"topic", "keys", "rate", "duration_s", "payload_bytes", "late_share", "late_by_s", "late_after_s", "idempotence", "seed"})
    topic_raw = f.get("topic", dict, {})
    t = _Fields(topic_raw, "workload.topic", {"name", "partitions", "replication", "config"})
    topic = TopicSpec(
        t.get("name", str, "source"), t.get("partitions", int, 2, minimum=1), t.get("replication", int, 1, minimum=1),
        {str(k): str(v) for k, v in t.get("config", dict, {}).items()},
    )
    return WorkloadSpec(
        topic=topic,
        keys=f.get("keys", int, 8, minimum=1),
        rate=float(f.get("rate", (int, float), 200.0, minimum=0.1)),
        duration_s=float(f.get("duration_s", (int, float), 30.0, minimum=0)),
        payload_bytes=f.get("payload_bytes", int, 64, minimum=0),
        late_share=float(f.get("late_share", (int, float), 0.0, minimum=0, maximum=1)),
        late_by_s=float(f.get("late_by_s", (int, float), 0.0, minimum=0)),
        late_after_s=float(f.get("late_after_s", (int, float), 0.0, minimum=0)),
        idempotence=f.get("idempotence", bool, True),
        seed=f.get("seed", int, 1),
    )


def _source_options(raw: Any, blueprint: Blueprint) -> dict[str, SourceOptions]:
    options = {}
    for name, body in (raw or {}).items():
        path = f"source_options.{name}"
        if name not in blueprint.streamlets:
            raise BlueprintError(path, f"unknown streamlet {name!r} (declared: {', '.join(blueprint.streamlets)})")
        f = _Fields(body, path, {"trigger", "trigger_interval", "max_offsets_per_trigger", "fail_on_data_loss",
                                 "starting_offsets", "starting_timestamp_ms"})
        trigger = f.get("trigger", str, "processingTime")
        if trigger not in ("default", "processingTime", "availableNow"):
            raise BlueprintError(f"{path}.trigger", f"expected default, processingTime or availableNow, got {trigger!r}")
        starting = f.get("starting_offsets", str, "earliest")
        if starting not in ("earliest", "latest"):
            raise BlueprintError(f"{path}.starting_offsets", f"expected earliest or latest, got {starting!r}")
        options[name] = SourceOptions(
            trigger=trigger,
            trigger_interval=f.get("trigger_interval", str, "1 second"),
            max_offsets_per_trigger=f.get("max_offsets_per_trigger", int, None, minimum=1),
            fail_on_data_loss=f.get("fail_on_data_loss", bool, True),
            starting_offsets=starting,
            starting_timestamp_ms=f.get("starting_timestamp_ms", int, None, minimum=0),
        )
    return options


def parse_scenario(raw: Any) -> Scenario:
    f = _Fields(raw, "scenario", {"name", "description", "cluster", "blueprint", "workload", "store", "source_options"})
    blueprint = parse_blueprint(f.get("blueprint", dict, required=True))
    c = _Fields(f.get("cluster", dict, {}), "cluster", {"brokers", "bootstrap_servers"})
    brokers = c.get("brokers", int, 1)
    if brokers not in (1, 3):
        raise BlueprintError("cluster.brokers", f"expected 1 or 3, got {brokers}")
    store = f.get("store", str, "sqlite")
    if store != "sqlite" and not store.startswith(("postgresql://", "postgres://")):
        raise BlueprintError("store", f"expected sqlite or a postgresql:// URL, got {store!r}")
    return Scenario(
        name=f.get("name", str, required=True),
        description=f.get("description", str, ""),
        blueprint=blueprint,
        workload=_workload(f.get("workload", dict, required=True)),
        cluster=ClusterSpec(brokers, c.get("bootstrap_servers", str, None)),
        store_url=None if store == "sqlite" else store,
        source_options=_source_options(f.get("source_options", dict, {}), blueprint),
        raw=raw,
    )


def load_scenario(path: Path) -> Scenario:
    """Read and validate a scenario file; every error names the file and the field."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ScenarioError(f"{path}: no such scenario file") from None
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read ({exc.strerror})") from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ScenarioError(f"{path}: not valid YAML{where}: {getattr(exc, 'problem', exc)}") from None
    if raw is None:
        raise ScenarioError(f"{path}: the file is empty")
    try:
        return parse_scenario(raw)
    except BlueprintError as exc:
        raise ScenarioError(f"{path}: {exc}") from None
