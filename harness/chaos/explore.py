"""The schedule search (`harness explore`): draw fault schedules from the scenario's `explore` space, run each with a
short workload and judge it against the scenario's expectations, stop at the first that fails, shrink it to a
minimal schedule (harness.chaos.shrink) and replay that one to measure how often it reproduces.

A failure's signature is the expectations that failed and the anomaly classes the run showed (lost, duplicated in
state, ...): a candidate of the shrinking reproduces the counterexample when it fails with the same signature. A
run that cannot be judged (it did not complete, an expectation could not be measured) is neither a pass nor a
failure. Each run has its own embedded cluster, started fresh and stopped with everything it ran, so no run's faults
can leak into the next one (a paused broker, a shrunk retention, a cut link): every run starts healthy.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Hashable

from harness.chaos.shrink import Judge, Shrunk, reproduce, shrink
from harness.chaos.storm import draw_storm
from harness.scenario import Scenario
from harness.scenario.explore_spec import ExploreSpec
from harness.scenario.fault_rules import FaultRule

UNJUDGED = "unjudged"  # a run's outcome that is neither a pass nor a failure
ANOMALIES = ("lost", "duplicated_in_state", "duplicated_deliveries", "phantom")
MIN_WORKLOAD_S = 10.0  # shrinking never shortens a workload below this: a driver needs seconds to start its batches


@dataclass(frozen=True)
class Fault:
    """One fault of a drawn schedule, hashable (the shrinking remembers schedules it ran)."""

    kind: str
    target: str
    start_s: float
    params: tuple  # (name, value) pairs, sorted

    @classmethod
    def of(cls, rule: FaultRule) -> Fault:
        return cls(rule.kind, rule.target, float(rule.start_s), tuple(sorted(rule.params.items())))

    def rule(self) -> FaultRule:
        return FaultRule(self.kind, self.target, self.start_s, params=dict(self.params))

    def as_yaml(self) -> dict:
        """As a scenario's faults section lists it."""
        return {"kind": self.kind, "target": self.target, "start_s": self.start_s, **dict(self.params)}

    def label(self) -> str:
        params = ", ".join(f"{k}={v}" for k, v in self.params)
        return f"{self.kind} {self.target} at {self.start_s:g}s" + (f" ({params})" if params else "")


Schedule = tuple  # of Fault


def draw_schedule(spec: ExploreSpec, scenario: Scenario, seed: int, index: int) -> Schedule:
    """The `index`th schedule of `seed` (the same seed draws the same schedules): 1 to spec.space.faults faults,
    drawn as a storm's are."""
    rng = random.Random(f"explore:{seed}:{index}")
    count = rng.randint(1, spec.space.faults)
    storm = draw_storm(replace(spec.space, faults=count), scenario, rng.randrange(2**31))
    return tuple(Fault.of(rule) for rule in storm.rules)


def simpler(fault: Fault, spec: ExploreSpec) -> list[Fault]:
    """Simpler faults to try in its place, the simplest change first: a kill at any moment instead of one aimed at a
    batch's write, a graceful stop instead of a crash, an earlier start, shorter durations."""
    params = dict(fault.params)
    found = []
    if params.get("at") in ("after-write", "in-flight"):
        found.append(replace(fault, params=tuple(sorted({**params, "at": "anytime"}.items()))))
    elif params.get("signal") == "SIGKILL":
        found.append(replace(fault, params=tuple(sorted({**params, "signal": "SIGTERM"}.items()))))
    if fault.start_s > spec.space.start_s:
        found.append(replace(fault, start_s=spec.space.start_s))
    for name, value in params.items():
        if name.endswith("_s") and isinstance(value, (int, float)) and value >= 2:
            found.append(replace(fault, params=tuple(sorted({**params, name: round(value / 2, 1)}.items()))))
    return found


def signature(outcome: str, failed: list[str], counts: dict) -> Hashable | None:
    """A judged run's failure signature: the expectations that failed and the anomaly classes it showed; None for a
    pass, UNJUDGED for a run that could not be judged."""
    if outcome == "pass":
        return None
    if outcome != "fail":
        return UNJUDGED
    return (tuple(sorted(failed)), tuple(a for a in ANOMALIES if counts.get(a)))


@dataclass
class Run:
    """One run of the search: its number, schedule, what it showed and where its report is."""

    number: int
    schedule: Schedule
    workload_s: float
    signature: Hashable | None
    phase: str  # search, shrink or replay
    report: str | None = None
    seconds: float = 0.0


@dataclass
class Exploration:
    """What a search found: every run, the failures by signature, the shrunk counterexample and its replays."""

    runs: list[Run] = field(default_factory=list)
    drawn: int = 0  # schedules drawn and run in the search
    failures: dict = field(default_factory=dict)  # signature -> the schedules that failed with it
    shrunk: Shrunk | None = None
    reproduced: float | None = None  # the share of the minimal schedule's replays that failed the same way
    budget_ended: bool = False

    @property
    def unjudged(self) -> int:
        return sum(1 for r in self.runs if r.signature == UNJUDGED)

    @property
    def exit_code(self) -> int:
        """1 a counterexample was found, 0 none in the budget, 3 none of the runs could be judged."""
        if self.failures:
            return 1
        return 3 if self.runs and self.unjudged == len(self.runs) else 0


def explore(
    scenario: Scenario,
    spec: ExploreSpec,
    judge: Callable[[Schedule, float, str], Hashable | None],
    budget_s: float,
    seed: int,
    k: int = 2,
    replays: int = 3,
    collect: bool = False,
    clock: Callable[[], float] = time.monotonic,
    on_run: Callable[[Exploration], None] = lambda found: None,
) -> Exploration:
    """Search until the first failing schedule (every failure, grouped, with `collect`) or the budget's end, then
    shrink the first failure within what is left of the budget, then replay the smallest schedule `replays` times.
    `judge(schedule, workload_s, phase)` runs one schedule and returns its signature (harness.chaos.explore
    signature)."""
    deadline = clock() + budget_s
    found = Exploration()

    def judged(phase: str) -> Judge:
        def run(schedule: Schedule, workload_s: float) -> Hashable | None:
            t0 = clock()
            result = judge(schedule, workload_s, phase)
            found.runs.append(Run(len(found.runs) + 1, schedule, workload_s, result, phase, seconds=clock() - t0))
            on_run(found)
            return result

        return run

    search = judged("search")
    while clock() < deadline and not (found.failures and not collect):
        schedule = draw_schedule(spec, scenario, seed, found.drawn)
        found.drawn += 1
        result = search(schedule, spec.workload_s)
        if result not in (None, UNJUDGED):
            found.failures.setdefault(result, []).append(schedule)
    found.budget_ended = clock() >= deadline
    if not found.failures:
        return found
    first, schedules = next(iter(found.failures.items()))
    found.shrunk = shrink(
        schedules[0],
        spec.workload_s,
        first,
        judged("shrink"),
        lambda fault: simpler(fault, spec),
        k=k,
        min_workload_s=MIN_WORKLOAD_S,
        spent=lambda: clock() >= deadline,
    )
    found.budget_ended = found.budget_ended or not found.shrunk.complete
    if replays:
        found.reproduced = reproduce(found.shrunk.schedule, found.shrunk.workload_s, first, judged("replay"), replays)
    return found
