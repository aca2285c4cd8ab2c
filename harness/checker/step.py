"""The check's seam: named steps, each (evidence, what the steps before it found) -> its own findings.

A check is a set of steps (harness/checker/check.py all_steps: STEPS, the checks of harness/checker/checks/ and
the scenario's own, then the expectations). What a step finds is an open map: each thing it finds is a typed `Key`,
defined in the step's module and set by that step alone (`writes`); a step says which keys it reads, those it
cannot do without (`needs`: it is not run when their step could not run) and those whose unknown value will do
(`uses`), and runs after the steps that set them (`in_order`). A step returns its findings, or adds its section to
the report (`section`). A step that raises, in a run, is check-safe: its keys take what its `unknown` gives (counts
None, not 0), a gap names it, its traceback goes to logs/check.log in the run directory, and a doubt makes the
outcome unknown. In strict mode (HARNESS_CHECK_STRICT=1, as the test suite sets it) it raises instead, so a bug
cannot hide as UNKNOWN.
"""

from __future__ import annotations

import os
import traceback
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Generic, TypeVar

from harness.checker.declared import FaultMiss
from harness.checker.intermediate import FaultSpan
from harness.checker.section import Section
from harness.errors import HarnessError
from harness.evidence.layout import RunLayout

if TYPE_CHECKING:  # the analyses import this module: their types are annotations here only
    from harness.checker.expectations.kind import ExpectationKind
    from harness.checker.load import Evidence

STRICT_ENV = "HARNESS_CHECK_STRICT"
T = TypeVar("T")


@dataclass(frozen=True, eq=False)
class Key(Generic[T]):
    """One thing a step finds, known by identity (two keys of one name never collide): `unknown()` is what it is
    where its step could not run (None for a count, "unknown" for a verdict, nothing for a list); `reported`: the
    Report shows it (report.json under its name)."""

    name: str
    unknown: Callable[[], T] = lambda: None
    reported: bool = False

    def __repr__(self) -> str:
        return f"Key({self.name})"


@dataclass
class Context:
    """What a check knows: the evidence, what was read of it before any step (the faults' spans, the failed
    queries, the faults that missed, why the run is unfinished), and what its steps have found so far (`found`,
    read as context[KEY])."""

    evidence: Evidence
    running: tuple[str, ...]
    unfinished: str  # why the run is not a finished one, or ""
    spans: list[FaultSpan]
    gaps: list[str]
    query_failures: list[dict]  # history query_failed: streamlet, ts_ms, error
    doubts: list[str] = field(default_factory=list)
    misses: list[FaultMiss] = field(default_factory=list)  # faults that did not strike as declared (declared.py)
    # how the hops are reconciled: (evidence, hops, spans) -> (a Reconciliation each, Tallies): in memory, or the
    # records counted where they are (harness/checker/summary)
    engine: Callable = lambda evidence, hops, spans: ([], None)
    own_checks: tuple[Step, ...] = ()  # the scenario's (harness/checker/own_checks.py): their expectations too
    found: dict[Key, Any] = field(default_factory=dict)
    failed: set[str] = field(default_factory=set)  # steps that raised or were not run
    unknown: set[Key] = field(default_factory=set)  # keys whose step could not run: they hold its unknown values
    # the sections the checks of harness/checker/checks/ add, by step name
    sections: dict[str, Section] = field(default_factory=dict)

    def __getitem__(self, key: Key[T]) -> T:
        return self.found[key]

    def get(self, key: Key[T]) -> T:
        """What the check found of `key`, or its unknown() where none of its steps finds it."""
        return self.found[key] if key in self.found else key.unknown()

    def known(self, key: Key) -> bool:
        """Whether the step that finds `key` ran."""
        return key in self.found and key not in self.unknown


def _nothing(context: Context) -> dict:
    return {}


@dataclass(frozen=True)
class Step:
    """One analysis: `run(context)` returns its findings, a value for each key it `writes`; `unknown(context)`
    what is known of them when it could not run (by default each key's unknown()). `needs` and `uses`: the keys it
    reads (see the module's docstring). `section(context)`: the part of the report it adds, after it ran (a check
    of harness/checker/checks/; None: nothing to say of this run); where it could not run, a gap names it instead.
    `expectations`: those a scenario may state of what it finds, judged from its section
    (harness/checker/expectations/kind.py)."""

    name: str
    run: Callable[[Context], dict] = _nothing  # a check that only adds its section finds no key
    writes: tuple[Key, ...] = ()
    needs: tuple[Key, ...] = ()
    uses: tuple[Key, ...] = ()
    unknown: Callable[[Context], dict] = _nothing
    section: Callable[[Context], Section | None] | None = None
    expectations: tuple[ExpectationKind, ...] = ()


def in_order(steps: list[Step], before: tuple[Step, ...] = ()) -> list[Step]:
    """`steps` in their order, each moved after the steps that set the keys it reads (of `before` or `steps`);
    ValueError naming a step that reads a key no step sets, or a key two steps set."""
    writers: dict[Key, str] = {}
    for step in [*before, *steps]:
        for key in step.writes:
            if key in writers:
                raise ValueError(f"{key.name} is found by two steps: {writers[key]} and {step.name}")
            writers[key] = step.name
    placed, waiting = [s.name for s in before], list(steps)
    ordered: list[Step] = []
    while waiting:
        ready = next((s for s in waiting if all(writers.get(k) in placed for k in (*s.needs, *s.uses))), None)
        if ready is None:
            unset = {k.name for s in waiting for k in (*s.needs, *s.uses) if k not in writers}
            raise ValueError(
                f"checks reading what no step finds ({', '.join(sorted(unset))}) or each other: "
                + ", ".join(s.name for s in waiting)
            )
        ordered.append(ready)
        placed.append(ready.name)
        waiting.remove(ready)
    return ordered


def strict_default() -> bool:
    return os.environ.get(STRICT_ENV, "") not in ("", "0")


def run_steps(steps: list[Step], context: Context, strict: bool) -> None:
    """Run `steps` in order, check-safe unless `strict` (see the module's docstring); those not run, as what they
    need could not be found, are named in a gap."""
    skipped = []
    for step in steps:
        if any(key in context.unknown for key in step.needs):
            _unknown(step, context)
            skipped.append(step.name)
            continue
        try:
            found = step.run(context)
            if set(found) != set(step.writes):
                raise ValueError(f"step {step.name} found {sorted(k.name for k in found)}, not what it writes")
            context.found.update(found)
            section = step.section(context) if step.section is not None else None
            if section is not None:  # a check may have nothing to say of this run
                context.sections[step.name] = section
        except HarnessError:
            raise  # the run directory cannot be judged as asked (not the step's fault): the check stops, and says why
        except Exception as exc:
            if strict:
                raise
            _unknown(step, context)
            _record_failure(step, context, exc)
    if skipped:
        context.gaps.append(f"not run, as what they need could not be found: check step(s) {', '.join(skipped)}")


def _unknown(step: Step, context: Context) -> None:
    context.failed.add(step.name)
    context.unknown.update(step.writes)
    context.found.update({key: key.unknown() for key in step.writes} | step.unknown(context))


def _record_failure(step: Step, context: Context, exc: Exception) -> None:
    what = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]
    where = ""
    try:
        layout = RunLayout(context.evidence.root)
        layout.log_dir.mkdir(parents=True, exist_ok=True)
        with open(layout.log("check"), "a") as log:
            log.write(f"check step {step.name}\n{''.join(traceback.format_exception(exc))}\n")
        where = " (its traceback: logs/check.log)"
    except OSError:  # a read-only run directory: the gap still names the step
        pass
    context.gaps.append(f"check step {step.name} failed: {what}; what it finds is unknown{where}")
    context.doubts.append(f"the check's step {step.name} failed ({what})")
