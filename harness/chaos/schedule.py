"""Fault schedules: when each fault fires, drawn from the run's seed.

A scenario declares faults as rules ("kill the processor's driver every 20 s
with 5 s of jitter, 3 times, starting at 15 s"); `plan` turns them into a
concrete, sorted list of firings. The same seed and duration give the same
list, so a run can be reproduced.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, replace

from harness.scenario.fault_rules import FaultRule, whole_run


@dataclass(frozen=True)
class Firing:
    at_s: float
    rule_index: int
    kind: str
    target: str
    params: dict
    group: str | None = None  # see FaultRule.group
    number: int = 0  # its number among the run's faults (the whole-run ones first), everywhere the run names it
    window_s: float | None = None  # see FaultRule.window_s


def plan(rules: list[FaultRule], seed: int, duration_s: float) -> list[Firing]:
    """Concrete firing times for every scheduled rule, within [0, duration_s), sorted by time and numbered after
    the whole-run faults (fault_rules.whole_run)."""
    firings = []
    for index, rule in enumerate(rules):
        if not rule.fault.scheduled:
            continue
        rng = random.Random(f"{seed}:{index}:{rule.kind}:{rule.target}")
        for n in itertools.count():
            if rule.times is not None and n >= rule.times or n > 0 and rule.every_s is None:
                break
            nominal = rule.start_s + n * (rule.every_s or 0.0)
            at = max(0.0, nominal + rng.uniform(-rule.jitter_s, rule.jitter_s))
            if nominal >= duration_s:
                break
            if at >= duration_s:
                continue
            firings.append(
                Firing(
                    round(at, 3), index, rule.kind, rule.target, dict(rule.params), rule.group, window_s=rule.window_s
                )
            )
    first = len(whole_run(rules)) + 1
    ordered = sorted(firings, key=lambda f: (f.at_s, f.rule_index))
    return [replace(f, number=first + i) for i, f in enumerate(ordered)]
