"""Storms: fault schedules drawn at random from a seed, overlapping every fault kind the pipeline and its
cluster can play (the scenario's `storm` section, harness.scenario.storm_spec).

Each fault is a kind drawn among those that can play here, a target drawn among the kind's targets, the
kind's own parameters (FaultKind.draw) and a moment a drawn spacing after the one before, so faults on
different targets overlap. A kind that cannot play here is left out, saying why: one that cannot overlap
safely (FaultKind.solo), one whose needs the cluster does not meet, or a broker kind when no broker may go
down. A storm's broker faults share a limit, enforced by the chaos driver as they play: never more brokers
down at once than the topics' replication minus min.insync.replicas allows, unless the scenario asks.
The schedule search draws its schedules here too.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from harness.cluster.config import min_insync_replicas
from harness.errors import HarnessError
from harness.faults import FaultKind, builtin_fault_kinds, load_fault_kind
from harness.scenario import Scenario
from harness.scenario.fault_rules import FaultRule, target_names, unmet_need
from harness.scenario.storm_spec import MOMENT, StormSpec

BROKERS = "brokers"  # the group of a storm's broker faults (harness.chaos.player limits it)
WHOLE_RUN_SHARE = 0.5  # a whole-run kind (executor-crash) joins a storm with this probability


@dataclass(frozen=True)
class Storm:
    rules: tuple[FaultRule, ...]
    left_out: dict[str, str]  # kind -> why this storm could not play it
    max_brokers_down: int
    past_the_end: int = 0  # faults drawn to start after the workload's end: not planned

    def describe(self) -> dict:
        """For the run directory (scenario.json resolved.storm): what was drawn, and what was left out and why."""
        return {
            "faults": len(self.rules),
            "kinds": sorted({r.kind for r in self.rules}),
            "left_out": self.left_out,
            "max_brokers_down": self.max_brokers_down,
            "past_the_end": self.past_the_end,
        }


def broker_budget(scenario: Scenario) -> int:
    """How many brokers may be down at once with every topic still taking acks=all writes: the least of
    replication minus min.insync.replicas over the run's topics; 0 on a cluster one runs (its settings unknown)."""
    cluster = scenario.cluster
    if cluster.bootstrap_servers:
        return 0
    topics = [*(source.topic for source in scenario.workload.fed), *scenario.blueprint.hops()]
    default_isr = min_insync_replicas(cluster.brokers)
    return max(0, min(t.replication - int(t.config.get("min.insync.replicas", default_isr)) for t in topics))


def draw_storm(spec: StormSpec, scenario: Scenario, seed: int, duration_s: float | None = None) -> Storm:
    """The storm of `seed` for this scenario (the same seed draws the same storm), its timed faults within the
    workload's `duration_s` (None: the scenario's): one drawn past its end is left out, and counted, rather than
    planned for a run that would not play it."""
    end = scenario.workload.duration_s if duration_s is None else duration_s
    rng = random.Random(f"storm:{seed}")
    playable, left_out, budget = playable_kinds(spec, scenario)
    timed = [k for k in playable if k.scheduled]
    rules = []
    at = spec.start_s
    for _ in range(spec.faults if timed else 0):
        kind = rng.choice(timed)
        rules.append(_rule(kind, scenario, spec, rng, round(at, 1)))
        at += rng.uniform(*spec.spacing_s)
    rules += [
        _rule(kind, scenario, spec, rng) for kind in playable if not kind.scheduled and rng.random() < WHOLE_RUN_SHARE
    ]
    kept = tuple(r for r in rules if not r.fault.scheduled or r.start_s < end)
    return Storm(kept, left_out, budget, len(rules) - len(kept))


def playable_kinds(spec: StormSpec, scenario: Scenario) -> tuple[list[FaultKind], dict[str, str], int]:
    """The kinds `spec` draws from that can play on this pipeline and cluster, by name; why each other one cannot;
    how many brokers may be down at once."""
    kinds = {name: load_fault_kind(name) for name in spec.kinds} if spec.kinds else builtin_fault_kinds()
    budget = broker_budget(scenario) if spec.max_brokers_down is None else spec.max_brokers_down
    left_out = {name: why for name, kind in kinds.items() if (why := _why_not(kind, scenario, spec, budget))}
    return [kind for name, kind in sorted(kinds.items()) if name not in left_out], left_out, budget


def _rule(kind: FaultKind, scenario: Scenario, spec: StormSpec, rng: random.Random, start_s: float = 0.0) -> FaultRule:
    return FaultRule(
        kind.name,
        rng.choice(_targets(kind, scenario, spec)),
        start_s,
        params=_params(kind, spec, rng),
        fault=kind,
        group=BROKERS if kind.target == "broker" else None,
        window_s=None,  # a storm's faults wait for room by design: only their moment and target are held to it
    )


def _targets(kind: FaultKind, scenario: Scenario, spec: StormSpec) -> list[str]:
    names = target_names(kind, scenario.blueprint, scenario.cluster)
    return names if spec.targets is None else [n for n in names if n in spec.targets]


def _moments(kind: FaultKind, spec: StormSpec) -> list[str] | None:
    """The moments this kind may strike at (None: it has no moment, or the spec leaves its draw alone)."""
    if spec.moments is None or MOMENT not in kind.params:
        return None
    return [m for m in spec.moments if m in kind.params[MOMENT].choices]


def _params(kind: FaultKind, spec: StormSpec, rng: random.Random) -> dict:
    """The kind's own draw; with moments asked for, one of them in place of its own, redrawn until the kind's
    parameters agree with it (kill-driver: a kill after a write is a crash, never a graceful stop)."""
    moments = _moments(kind, spec)
    for _ in range(100):
        params = kind.drawn(rng)
        if moments is None:
            return params
        params[MOMENT] = rng.choice(moments)
        if kind.check is None or kind.check(params) is None:
            return params
    raise HarnessError(f"{kind.name}: no parameters of its draw agree with the moments {', '.join(moments)}")


def _why_not(kind: FaultKind, scenario: Scenario, spec: StormSpec, budget: int) -> str | None:
    """Why a storm cannot play this kind on this pipeline and cluster (None: it can)."""
    if kind.solo:
        return f"cannot overlap other faults safely: {kind.solo}"
    if not kind.drawable:
        return "it has required parameters and no draw of its own (FaultKind.draw)"
    if kind.on_topics and scenario.workload.sources:
        return "it acts on topics, not yet with several source topics (workload.sources)"
    unmet = unmet_need(kind, scenario.cluster)
    if unmet:
        return unmet
    if not target_names(kind, scenario.blueprint, scenario.cluster):
        return f"no target for it here (it needs {kind.target})"
    if not _targets(kind, scenario, spec):
        return f"none of its targets here is among the targets asked for ({', '.join(spec.targets)})"
    if _moments(kind, spec) == []:
        return f"it strikes at none of the moments asked for ({', '.join(spec.moments)})"
    if kind.target == "broker" and budget < 1:
        return (
            "no broker may go down: the topics' replication minus min.insync.replicas is 0 "
            "(storm.max_brokers_down asks for more)"
        )
    return None
