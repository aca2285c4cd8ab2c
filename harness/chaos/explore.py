"""The schedule search (`harness explore`): draw fault schedules from the scenario's `explore` space, run each with a
short workload and judge it against the scenario's expectations, stop at the first that fails, shrink it to a
minimal schedule (harness.chaos.shrink) and replay that one to measure how often it reproduces.

A failure's signature is the expectations that failed and the anomaly classes the run showed (lost, duplicated in
state, ...): a candidate of the shrinking reproduces the counterexample when it fails with the same signature. A
run that cannot be judged (it did not complete, an expectation could not be measured) is neither a pass nor a
failure. On the embedded cluster each run has its own, started fresh and stopped with everything it ran, so no
run's faults can leak into the next (a paused broker, a shrunk retention, a cut link). On a cluster one runs, shared
by every run, the judge checks its health first and discards a run that would start on an unhealthy cluster
(DISCARDED): the search stops after a few in a row.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Hashable

from harness.chaos.shrink import Judge, Shrunk, reproduce, shrink
from harness.chaos.storm import draw_storm, playable_kinds
from harness.faults import load_fault_kind
from harness.scenario import Scenario
from harness.scenario.explore_spec import ExploreSpec
from harness.scenario.fault_rules import FaultRule

UNJUDGED = "unjudged"  # a run's outcome that is neither a pass nor a failure
DISCARDED = "discarded"  # a run not played: the cluster it shares was not healthy before it
DISCARDS_IN_A_ROW = 3  # the search stops after this many (the cluster stays unhealthy)
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


def empty_space(spec: ExploreSpec, scenario: Scenario) -> str | None:
    """Why the space holds no schedule (no kind it names can play on this pipeline and cluster), or None."""
    storm = draw_storm(spec.space, scenario, 0)
    if storm.rules:
        return None
    why = "; ".join(f"{kind}: {reason}" for kind, reason in sorted(storm.left_out.items()))
    return f"explore: no fault of the space can play here ({why or 'no timed fault kind'})"


def started_ahead(spec: ExploreSpec, scenario: Scenario) -> bool:
    """Whether the search's runs can be started before their schedules are known: no kind the space draws, nor a
    weaker kind the shrinking tries in its place, shapes a run's start (FaultKind.shapes_start)."""
    kinds, _, _ = playable_kinds(spec.space, scenario)
    kinds += [load_fault_kind(kind.weaker) for kind in kinds if kind.weaker]
    return not any(kind.shapes_start for kind in kinds)


def simpler(fault: Fault, spec: ExploreSpec) -> list[Fault]:
    """Faults to try in its place, the most telling first: the kind's weaker kind (FaultKind.weaker: a broker
    stopped instead of killed, a link delayed instead of cut), a kill at any moment tied to a batch's write instead
    (what it struck by chance, it then strikes every time), a graceful stop instead of a crash, an earlier start,
    shorter durations. A moment tied to an event is never loosened: the minimal schedule should reproduce."""
    params = dict(fault.params)
    found = []
    weaker = load_fault_kind(fault.kind).weaker
    if weaker:  # the same target, the weaker kind's defaults and what the two share kept
        kind = load_fault_kind(weaker)
        shared = {name: value for name, value in params.items() if name in kind.params}
        found.append(replace(fault, kind=weaker, params=tuple(sorted({**kind.defaults(), **shared}.items()))))
    if params.get("at") == "anytime" and params.get("signal") == "SIGKILL":
        found.append(replace(fault, params=tuple(sorted({**params, "at": "after-write"}.items()))))
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


def said(signature: Hashable | None) -> str:
    """A signature as a person reads it: `fails end_to_end (duplicated in state)`, pass, unjudged or discarded."""
    if signature is None:
        return "pass"
    if isinstance(signature, str):
        return signature
    failed, anomalies = signature
    shown = ", ".join(a.replace("_", " ") for a in anomalies) or "no anomaly counted"
    return f"fails {', '.join(failed)} ({shown})"


@dataclass
class Run:
    """One run of the search: its number, schedule, what it showed and how long it took."""

    number: int
    schedule: Schedule
    workload_s: float
    signature: Hashable | None
    phase: str  # search, shrink or replay
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
    stopped: str | None = None  # why the search stopped before its budget's end

    @property
    def unjudged(self) -> int:
        return sum(1 for r in self.runs if r.signature in (UNJUDGED, DISCARDED))

    @property
    def exit_code(self) -> int:
        """1 a counterexample was found, 0 none in the budget, 3 none of the runs could be judged or the search
        stopped (the shared cluster stayed unhealthy)."""
        if self.failures:
            return 1
        return 3 if self.stopped or (self.runs and self.unjudged == len(self.runs)) else 0

    def discards_in_a_row(self) -> int:
        count = 0
        for run in reversed(self.runs):
            if run.signature != DISCARDED:
                break
            count += 1
        return count


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
            if found.discards_in_a_row() >= DISCARDS_IN_A_ROW:
                found.stopped = f"{DISCARDS_IN_A_ROW} runs in a row discarded: the cluster stays unhealthy"
            return result

        return run

    search = judged("search")
    while clock() < deadline and not found.stopped and not (found.failures and not collect):
        schedule = draw_schedule(spec, scenario, seed, found.drawn)
        result = search(schedule, spec.workload_s)
        if result == DISCARDED:  # not played: the same schedule again, on a healthy cluster
            continue
        found.drawn += 1
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
        spent=lambda: clock() >= deadline or found.stopped is not None,
    )
    found.budget_ended = found.budget_ended or not found.shrunk.complete
    if replays and not found.stopped:
        found.reproduced = reproduce(found.shrunk.schedule, found.shrunk.workload_s, first, judged("replay"), replays)
    return found
