"""Fault schedules: when each fault fires, drawn from the run's seed.

A scenario declares faults as rules ("kill the processor's driver every 20 s
with 5 s of jitter, 3 times, starting at 15 s"); `plan` turns them into a
concrete, sorted list of firings. The same seed and duration give the same
list, so a run can be reproduced.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass(frozen=True)
class FaultRule:
    kind: str  # kill-driver | broker-kill | broker-pause | retention-shrink | redeploy
    target: str  # a streamlet name, or broker-N
    start_s: float = 10.0
    every_s: float | None = None  # repeat period; None: once
    jitter_s: float = 0.0  # each firing moves by up to +/- this much
    times: int = 1  # firings at most (within the duration)
    params: dict = field(default_factory=dict)  # kind-specific: signal, restart_after_s, ...


@dataclass(frozen=True)
class Firing:
    at_s: float
    rule_index: int
    kind: str
    target: str
    params: dict


def plan(rules: list[FaultRule], seed: int, duration_s: float) -> list[Firing]:
    """Concrete firing times for every rule, within [0, duration_s), sorted by time."""
    firings = []
    for index, rule in enumerate(rules):
        rng = random.Random(f"{seed}:{index}:{rule.kind}:{rule.target}")
        for n in range(rule.times):
            nominal = rule.start_s + n * (rule.every_s or 0.0)
            if n > 0 and rule.every_s is None:
                break
            at = max(0.0, nominal + rng.uniform(-rule.jitter_s, rule.jitter_s))
            if at >= duration_s:
                break
            firings.append(Firing(round(at, 3), index, rule.kind, rule.target, dict(rule.params)))
    return sorted(firings, key=lambda f: (f.at_s, f.rule_index))
