"""The `faults` section of a scenario: what breaks, when, and how hard.

    faults:
      - kind: kill-driver        # a built-in kind (`harness faults` lists them), or package.module:attr
        target: processor
        start_s: 15              # first firing, seconds into the workload
        every_s: 20              # repeat period (omit: once)
        jitter_s: 3              # each firing moves by up to +/- this, drawn from the seed
        times: 3                 # this many firings, each within the workload (omit with every_s: until the end)
        window_s: 150            # each must begin within this long of its planned time (the default)
        signal: SIGKILL          # the kind's own parameters
        restart_after_s: 3

A kind is known in its own module (harness/faults/kinds/, or the user's): its parameters, what it targets
(a streamlet, a processor, `broker-N` of the embedded cluster, or a network link: a streamlet's or the
generator's), whether it is timed or lasts the whole run. This module checks a scenario against that.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.faults import FaultKind, FaultKindError, load_fault_kind
from harness.faults.kind import GENERATOR, REQUIRED
from harness.field import Field
from harness.scenario.blueprint import Blueprint
from harness.scenario.fields import BlueprintError
from harness.scenario.sections import Section
from harness.scenario.targets import RULES

# How long after its planned time a fault may begin and still be played as declared: as long as a kill waits for
# its moment (harness/faults/kinds/kill_driver.py), which outlasts a restart upstream on a busy machine. Later, the
# checker says it missed.
WINDOW_S = 150.0
NUMBER = (int, float)
SCHEDULE = (
    Field(
        "kind", str, None, "a fault kind (harness faults), or package.module:attr for one of your own", required=True
    ),
    Field("target", str, None, "what it strikes (the generator's kinds need none)"),
    Field("start_s", NUMBER, 10.0, "its first firing, seconds into the workload", minimum=0),
    Field("every_s", NUMBER, None, "repeat period (none: once)", minimum=0.1),
    Field("jitter_s", NUMBER, 0.0, "each firing moves by up to +/- this", minimum=0),
    Field("times", int, None, "this many firings (with every_s and none: until the workload ends)", minimum=1),
    Field("window_s", NUMBER, WINDOW_S, "each must begin within this long of its planned time", minimum=1),
)
FAULT = Section("faults[N]", SCHEDULE)  # and the kind's own parameters (its params)


def _fields(fault: FaultKind, path: str) -> Section:
    """What a fault of `fault`'s kind takes: its schedule (only kind and target for a whole-run kind) and its params."""
    params = tuple(
        Field(
            name,
            p.types,
            None if p.default is REQUIRED else p.default,
            "",
            p.minimum,
            p.maximum,
            p.choices,
            required=p.default is REQUIRED,
        )
        for name, p in fault.params.items()
    )
    return Section(path, (SCHEDULE if fault.scheduled else SCHEDULE[:2]) + params)


@dataclass(frozen=True)
class FaultRule:
    kind: str  # as the scenario names it
    target: str  # a streamlet name, broker-N, or generator
    start_s: float = 10.0
    every_s: float | None = None  # repeat period; None: once
    jitter_s: float = 0.0  # each firing moves by up to +/- this much
    times: int | None = 1  # firings at most; None: as many as fit in the duration
    params: dict = field(default_factory=dict)  # kind-specific, defaults filled in
    fault: FaultKind | None = field(default=None, compare=False, repr=False)  # what the kind name resolved to
    group: str | None = None  # faults of a group share a limit on how many play at once (a storm's broker faults)
    # how late it may begin and be played as declared; None: any time (a storm's faults wait for room by design)
    window_s: float | None = WINDOW_S

    def __post_init__(self) -> None:
        if self.fault is None:  # a rule made in code, by name
            object.__setattr__(self, "fault", load_fault_kind(self.kind))


def whole_run(rules: list[FaultRule]) -> list[FaultRule]:
    """The rules active for the whole workload, in their order: faults 1 to N of the run, begun as it starts."""
    return [r for r in rules if not r.fault.scheduled]


def unplayable(rules: list[FaultRule], duration_s: float) -> tuple[int, str] | None:
    """(rule index, why) for the first rule a workload of `duration_s` cannot hold all its declared firings of: its
    start (or, with `times`, its last firing), jitter included, at or past the end. None: every one fits."""
    for index, rule in enumerate(rules):
        if not rule.fault.scheduled:
            continue
        fixed = rule.times if rule.every_s is not None and rule.times is not None else 1
        last = rule.start_s + (fixed - 1) * (rule.every_s or 0.0)
        if last + rule.jitter_s >= duration_s:
            firing = "its start" if fixed == 1 else f"its firing {fixed} of {fixed}"
            jitter = f" plus its jitter {rule.jitter_s:g}s" if rule.jitter_s else ""
            return index, f"{firing} at {last:g}s{jitter} is not within the workload of {duration_s:g}s"
    return None


def unmet_need(fault: FaultKind, cluster) -> str | None:
    """Why this cluster cannot play the kind (what it needs that the harness does not start here), or None."""
    if "kafka-cluster" in fault.needs and cluster.bootstrap_servers:
        return f"{fault.name} needs the embedded cluster; this scenario uses cluster.bootstrap_servers"
    if "brokers" in fault.needs and not cluster.faultable_brokers:
        return (
            f"{fault.name} needs brokers the harness can fault: on a cluster you run, list their containers in "
            "cluster.docker.containers"
        )
    if "plaintext" in fault.needs and cluster.security:
        return f"{fault.name} reads Kafka's requests on the wire; its listeners speak TLS ({cluster.security})"
    if "spark-cluster" in fault.needs and not cluster.spark_standalone:
        return (
            f"{fault.name} needs the Spark standalone cluster the harness starts (cluster.spark.master: standalone), "
            f"this scenario's master is {cluster.spark_master}"
        )
    return None


def target_names(fault: FaultKind, blueprint: Blueprint, cluster) -> list[str]:
    """Every target this kind can have in this pipeline and cluster (what a storm draws from)."""
    return RULES[fault.target].names(blueprint, cluster)


def parse_faults(raw: Any, blueprint: Blueprint, cluster) -> list[FaultRule]:
    """The rules of `raw` checked against the blueprint and `cluster` (a ClusterSpec: brokers, bootstrap servers,
    Spark)."""
    if not isinstance(raw, list):
        raise BlueprintError("faults", f"expected a list of faults, got {type(raw).__name__}")
    rules = []
    for index, item in enumerate(raw):
        path = f"faults[{index}]"
        name = item.get("kind") if isinstance(item, dict) else None
        if not isinstance(name, str):
            raise BlueprintError(f"{path}.kind", f"expected the name of a fault kind, got {name!r}")
        try:
            fault = load_fault_kind(name)
        except FaultKindError as exc:
            raise BlueprintError(f"{path}.kind", str(exc)) from None
        v = {spec.name: spec.default for spec in SCHEDULE} | _fields(fault, path).read(item)  # a whole-run kind's too
        target = v["target"] or (GENERATOR if fault.target == GENERATOR else None)  # the generator need not be named
        if target is None:
            raise BlueprintError(f"{path}.target", "required field is missing")
        unmet = unmet_need(fault, cluster)
        if unmet:
            raise BlueprintError(f"{path}.kind", unmet)
        wrong = RULES[fault.target].wrong(fault, target, blueprint, cluster)
        if wrong:
            raise BlueprintError(f"{path}.target", wrong)
        params = {pname: v[pname] for pname in fault.params}
        try:
            clash = fault.check(params) if fault.check else None
        except Exception as exc:  # a kind of one's own whose check fails: one line, naming it
            raise BlueprintError(f"{path}.kind", f"{name}: its check failed: {type(exc).__name__}: {exc}") from None
        if clash:
            raise BlueprintError(f"{path}.{clash[0]}", clash[1])
        every = v["every_s"]
        times = v["times"] if v["times"] is not None or every is not None else 1
        if times is not None and times > 1 and every is None:
            raise BlueprintError(f"{path}.every_s", f"required when times is {times}")
        rules.append(
            FaultRule(
                name,
                target,
                v["start_s"],
                every,
                v["jitter_s"],
                times,
                params,
                fault,
                window_s=v["window_s"],
            )
        )
    return rules
