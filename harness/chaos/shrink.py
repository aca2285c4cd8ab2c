"""Shrinking a failing fault schedule to a minimal one: delta debugging over its faults, then simpler faults, then
a shorter workload, each candidate re-run (the schedule search's second half, `harness explore`).

A run that fails is a real counterexample (the checker is sound); a run that passes is weak evidence (a fault
may miss its moment). So a candidate counts as failing when any of `k` runs fails with the same signature (the
expectation that failed and the anomaly class) as the schedule being shrunk; a run failing otherwise is not this
counterexample. The faults are opaque here (hashable values): `simplify(fault)` proposes simpler ones (a weaker
kind, an earlier moment, a shorter duration), in the order to try them. The same schedule and judge give the same
trace.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Hashable, Sequence

Schedule = tuple  # of faults, in the order they play
# (schedule, workload seconds) -> the signature of the failure one run showed, or None when it passed
Judge = Callable[[Schedule, float], Hashable | None]


@dataclass(frozen=True)
class Step:
    """One candidate tried: what it was, what its runs showed, and whether it was kept."""

    schedule: Schedule
    workload_s: float
    signatures: tuple  # one per run (None: passed)
    kept: bool
    why: str  # which pass proposed it: "drop", "simplify", "shorten"


@dataclass
class Shrunk:
    """The smallest failing schedule found, with the trace that led there."""

    schedule: Schedule
    workload_s: float
    signature: Hashable
    trace: list[Step] = field(default_factory=list)
    runs: int = 0
    complete: bool = True  # False: the run budget ended first (the schedule is the smallest found so far)


class _Budget(Exception):
    """The runs allowed are spent."""


def shrink(
    schedule: Sequence,
    workload_s: float,
    signature: Hashable,
    judge: Judge,
    simplify: Callable[[object], Sequence] = lambda fault: (),
    *,
    k: int = 2,
    min_workload_s: float = 5.0,
    max_runs: int | None = None,
    spent: Callable[[], bool] = lambda: False,
) -> Shrunk:
    """Shrink `schedule` (which failed with `signature` at `workload_s`) until no fault can be dropped or made
    simpler and the workload not shortened without losing the failure; at most `max_runs` runs of `judge`, none
    begun once `spent()` (a time budget)."""
    found = Shrunk(tuple(schedule), workload_s, signature)
    tried: dict[tuple, bool] = {}  # a candidate is run once (faults are hashable): simplifications never cycle

    def fails(candidate: Schedule, seconds: float, why: str) -> bool:
        if (candidate, seconds) in tried:
            return tried[(candidate, seconds)]
        signatures = []
        for _ in range(k):
            if max_runs is not None and found.runs >= max_runs or spent():
                raise _Budget
            found.runs += 1
            signatures.append(judge(candidate, seconds))
            if signatures[-1] == signature:
                break
        kept = tried[(candidate, seconds)] = signatures[-1] == signature
        found.trace.append(Step(candidate, seconds, tuple(signatures), kept, why))
        if kept:
            found.schedule, found.workload_s = candidate, seconds
        return kept

    try:
        _drop(found, fails)
        _simplify(found, fails, simplify)
        _shorten(found, fails, min_workload_s)
    except _Budget:
        found.complete = False
    return found


def _drop(found: Shrunk, fails) -> None:
    """Delta debugging (ddmin) over the faults: drop chunks, then their complements, finer and finer, until every
    single fault is needed (1-minimal)."""
    chunks = 2
    while len(found.schedule) >= 2:
        current = found.schedule
        size = -(-len(current) // chunks)
        parts = [current[i : i + size] for i in range(0, len(current), size)]
        reduced = False
        for part in parts:  # one chunk alone
            if fails(part, found.workload_s, "drop"):
                chunks, reduced = 2, True
                break
        if not reduced:
            for i in range(len(parts)):  # all but one chunk
                rest = tuple(f for j, p in enumerate(parts) if j != i for f in p)
                if len(parts) > 2 and fails(rest, found.workload_s, "drop"):
                    chunks, reduced = max(chunks - 1, 2), True
                    break
        if not reduced:
            if chunks >= len(current):
                break
            chunks = min(len(current), chunks * 2)
    if len(found.schedule) == 1:
        fails((), found.workload_s, "drop")  # even no fault at all may fail: then the faults are not the cause


def _simplify(found: Shrunk, fails, simplify) -> None:
    """Each fault replaced by the first simpler one that still fails, until none can be."""
    changed = True
    while changed:
        changed = False
        for i, fault in enumerate(found.schedule):
            for simpler in simplify(fault):
                candidate = found.schedule[:i] + (simpler,) + found.schedule[i + 1 :]
                if fails(candidate, found.workload_s, "simplify"):
                    changed = True
                    break
            if changed:
                break


def _shorten(found: Shrunk, fails, min_workload_s: float) -> None:
    """The workload halved while the schedule still fails, down to `min_workload_s`."""
    while found.workload_s / 2 >= min_workload_s:
        if not fails(found.schedule, found.workload_s / 2, "shorten"):
            break


def reproduce(schedule: Schedule, workload_s: float, signature: Hashable, judge: Judge, times: int) -> float:
    """The share of `times` runs of the schedule that fail with `signature` (the minimal schedule's replay)."""
    return sum(judge(schedule, workload_s) == signature for _ in range(times)) / times
