"""The `faults` section of a scenario: what breaks, when, and how hard.

    faults:
      - kind: kill-driver        # SIGKILL/SIGTERM a streamlet's driver, restart it
        target: processor
        start_s: 15              # first firing, seconds into the workload
        every_s: 20              # repeat period (omit: once)
        jitter_s: 3              # each firing moves by up to +/- this, drawn from the seed
        times: 3                 # at most this many firings (omit with every_s: until the end)
        signal: SIGKILL
        restart_after_s: 3
        at: after-write          # kill while a batch is written but not committed (default: anytime);
                                 # in-flight: the same for Spark's own sinks (no crash point), by watching
                                 # the checkpoint and the output

Each kind has its own parameters (see KINDS); a target is a streamlet of the
blueprint or `broker-N` of the embedded cluster.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.scenario.fields import Fields
from harness.scenario.blueprint import Blueprint, BlueprintError

SCHEDULE_FIELDS = {"kind", "target", "start_s", "every_s", "jitter_s", "times"}


@dataclass(frozen=True)
class FaultRule:
    kind: str
    target: str  # a streamlet name, or broker-N
    start_s: float = 10.0
    every_s: float | None = None  # repeat period; None: once
    jitter_s: float = 0.0  # each firing moves by up to +/- this much
    times: int | None = 1  # firings at most; None: as many as fit in the duration
    params: dict = field(default_factory=dict)  # kind-specific, defaults filled in


@dataclass(frozen=True)
class KindSpec:
    target: str  # "streamlet", "broker" or "processor"
    params: dict  # name -> (type, default, minimum, maximum, choices)
    scheduled: bool = True  # False: active for the whole run (no start_s/every_s/times)
    help: str = ""


KINDS: dict[str, KindSpec] = {
    "kill-driver": KindSpec("streamlet", {
        "signal": (str, "SIGKILL", None, None, ("SIGKILL", "SIGTERM")),
        "restart_after_s": ((int, float), 3.0, 0, None, None),
        "at": (str, "anytime", None, None, ("anytime", "after-write", "in-flight")),
    }, help="kill a streamlet's driver (SIGKILL crash or SIGTERM graceful), restart it from its checkpoint; "
            "at: after-write kills while a batch is written but not yet committed (at its crash point); "
            "at: in-flight does the same for Spark's own sinks, watching offsets/N, commits/N and the output"),
    "executor-crash": KindSpec("processor", {
        "probability": ((int, float), None, 0, 1, None),
    }, scheduled=False, help="each record's Python worker exits with this probability; Spark retries the task"),
    "broker-kill": KindSpec("broker", {
        "down_s": ((int, float), 10.0, 0, None, None),
    }, help="SIGKILL a broker, restart it after down_s"),
    "broker-pause": KindSpec("broker", {
        "paused_s": ((int, float), 10.0, 0, None, None),
    }, help="SIGSTOP a broker, SIGCONT it after paused_s"),
    "retention-shrink": KindSpec("streamlet", {
        "retention_ms": (int, 1000, 1, None, None),
        "timeout_s": ((int, float), 90.0, 1, None, None),
    }, help="stop a streamlet, shrink its input topics' retention until records it has not read are deleted, restore, restart"),
    "redeploy": KindSpec("streamlet", {
        "starting": (str, "earliest", None, None, ("earliest", "latest", "timestamp")),
        "timestamp_back_s": ((int, float), 0.0, 0, None, None),
        "down_s": ((int, float), 3.0, 0, None, None),
    }, help="stop a streamlet, delete its checkpoints, restart from earliest, latest or a timestamp"),
}


def broker_node(target: str) -> int:
    """`broker-2` -> 2."""
    return int(target.split("-", 1)[1])


def _target(kind: str, spec: KindSpec, target: str, path: str, blueprint: Blueprint, brokers: int) -> None:
    if spec.target == "broker":
        node = target.split("-", 1)[1] if target.startswith("broker-") else ""
        if not node.isdigit() or not 1 <= int(node) <= brokers:
            names = ", ".join(f"broker-{n}" for n in range(1, brokers + 1))
            raise BlueprintError(path, f"{kind} needs a broker of the embedded cluster ({names}), got {target!r}")
        return
    if target not in blueprint.streamlets:
        raise BlueprintError(path, f"unknown streamlet {target!r} (declared: {', '.join(blueprint.streamlets)})")
    if spec.target == "processor" and blueprint.streamlets[target].kind != "processor":
        raise BlueprintError(path, f"{kind} needs a streamlet of kind processor, {target!r} is {blueprint.streamlets[target].kind}")


def parse_faults(raw: Any, blueprint: Blueprint, brokers: int, external: bool) -> list[FaultRule]:
    if not isinstance(raw, list):
        raise BlueprintError("faults", f"expected a list of faults, got {type(raw).__name__}")
    rules = []
    for index, item in enumerate(raw):
        path = f"faults[{index}]"
        kind = item.get("kind") if isinstance(item, dict) else None
        if not isinstance(kind, str) or kind not in KINDS:
            raise BlueprintError(f"{path}.kind", f"expected one of {', '.join(KINDS)}, got {kind!r}")
        spec = KINDS[kind]
        schedule = SCHEDULE_FIELDS if spec.scheduled else {"kind", "target"}
        f = Fields(item, path, schedule | set(spec.params))
        target = f.get("target", str, required=True)
        _target(kind, spec, target, f"{path}.target", blueprint, brokers)
        if spec.target == "broker" and external:
            raise BlueprintError(f"{path}.kind", f"{kind} needs the embedded cluster; this scenario uses cluster.bootstrap_servers")
        params = {}
        for name, (kinds, default, lo, hi, choices) in spec.params.items():
            value = f.choice(name, choices, default) if choices else f.get(name, kinds, default, lo, hi, required=default is None)
            params[name] = float(value) if kinds == (int, float) else value
        if params.get("at") in ("after-write", "in-flight") and params.get("signal") != "SIGKILL":
            raise BlueprintError(f"{path}.at", f"{params['at']} needs signal SIGKILL (a graceful stop would finish the batch)")
        every = f.number("every_s", None, minimum=0.1)
        times = f.get("times", int, 1 if every is None else None, minimum=1)
        if times is not None and times > 1 and every is None:
            raise BlueprintError(f"{path}.every_s", f"required when times is {times}")
        rules.append(FaultRule(kind, target, f.number("start_s", 10.0, minimum=0), every,
                               f.number("jitter_s", 0.0, minimum=0), times, params))
    return rules
