"""The check's seam: named steps, each (evidence, what the steps before it found) -> its own findings.

A check is a list of steps (harness/checker/check.py all_steps: STEPS, the checks of harness/checker/checks/ and
the scenario's own, then the expectations). Each reads the Context and sets the fields it owns, or adds its section
to the report (`section`); one that needs a step that failed is not run. A step that raises, in a run, is
check-safe: its fields take what its `unknown` gives (counts None, not 0), a gap names it, its traceback goes to
logs/check.log in the run directory, and a doubt makes the outcome unknown. In strict mode
(HARNESS_CHECK_STRICT=1, as the test suite sets it) it raises instead, so a bug cannot hide as UNKNOWN.
"""

from __future__ import annotations

import os
import traceback
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

import numpy as np

from harness.checker.declared import FaultMiss
from harness.checker.intermediate import Arrivals, CopyAccounting, FaultSpan, HopData, SentCopies, Tallies
from harness.checker.section import Section
from harness.errors import HarnessError
from harness.evidence.layout import RunLayout

if TYPE_CHECKING:  # the analyses import this module: their types are annotations here only
    from harness.checker.expectations.kind import ExpectationKind
    from harness.checker.expectations.result import ExpectationResult
    from harness.checker.findings import (
        FaultResult,
        Hop,
        Latency,
        Periods,
        ResourceUse,
        WindowCounts,
        Witness,
    )
    from harness.checker.load import Evidence
    from harness.checker.reconcile import Counts, Reconciliation

STRICT_ENV = "HARNESS_CHECK_STRICT"


def _none() -> np.ndarray:
    return np.array([], np.int64)


@dataclass
class Context:
    """What a check knows: the evidence, and what its steps have found so far. Each field below the evidence is
    set by one step (named in its comment)."""

    evidence: Evidence
    running: tuple[str, ...]
    unfinished: str  # why the run is not a finished one, or ""
    spans: list[FaultSpan]
    gaps: list[str]
    query_failures: list[dict]  # history query_failed: streamlet, ts_ms, error
    doubts: list[str] = field(default_factory=list)
    misses: list[FaultMiss] = field(default_factory=list)  # faults that did not strike as declared (declared.py)
    failed: set[str] = field(default_factory=set)  # steps that raised or were not run
    # how the hops are reconciled: (evidence, hops, spans) -> (a Reconciliation each, Tallies), the records counted
    # where they are (harness/checker/summary); None: in memory, with numpy
    engine: Callable | None = None
    # reconcile (harness/checker/hops.py)
    hops: list[HopData] = field(default_factory=list)
    results: list[Reconciliation] = field(default_factory=list)
    egress_result: Reconciliation | None = None
    lost: np.ndarray = field(default_factory=_none)
    lost_first: np.ndarray = field(default_factory=_none)
    duplicated: np.ndarray = field(default_factory=_none)
    duplicated_first: np.ndarray = field(default_factory=_none)
    # what an engine tallied with the reconciliation (None: the steps that need them tally with numpy)
    tallies: Tallies | None = None
    # arrivals (harness/checker/arrivals.py)
    arrivals: Arrivals | None = None
    # causes (harness/checker/causes.py): per lost record, "unknown" where the step failed
    cause_of_lost: np.ndarray = field(default_factory=lambda: np.array([], object))
    retention: list[dict] = field(default_factory=list)
    # unfinished (harness/checker/unfinished.py)
    undelivered: np.ndarray = field(default_factory=_none)
    lost_known: bool = True  # False: which missing records are lost could not be told
    # copies (harness/checker/copies.py)
    sent_copies: list[SentCopies] | None = None  # each hop's copies of the records sent, counted in memory
    accounting: CopyAccounting | None = None
    # counts (harness/checker/counts.py)
    counts: Counts | None = None
    verdict: str = "unknown"
    hop_findings: list[Hop] = field(default_factory=list)
    causes: dict = field(default_factory=dict)
    lost_by_cause: dict | None = None
    windows: WindowCounts | None = None
    # periods (harness/checker/periods.py)
    periods: Periods | None = None
    window_witnesses: list[Witness] = field(default_factory=list)
    witness_totals: dict = field(default_factory=dict)
    # faults (harness/checker/faults.py)
    faults: list[FaultResult] = field(default_factory=list)
    # latency, witnesses, timeline, resources, expectations: their modules
    latency: Latency | None = None
    witnesses: list[Witness] = field(default_factory=list)
    records: dict = field(default_factory=dict)
    timeline: dict = field(default_factory=dict)
    resources: ResourceUse | None = None
    expectations: list[ExpectationResult] = field(default_factory=list)
    # the sections the checks of harness/checker/checks/ add, by step name
    sections: dict[str, Section] = field(default_factory=dict)
    own_checks: tuple[Step, ...] = ()  # the scenario's (harness/checker/own_checks.py): their expectations too


@dataclass(frozen=True)
class Step:
    """One analysis: `run(context)` sets the context's fields it owns; `unknown(context)` sets them to what is
    known when it could not run (None for a count, "unknown" for a verdict). `needs`: the steps it reads.
    `section(context)`: the part of the report it adds, after it ran (a check of harness/checker/checks/; None:
    nothing to say of this run); where it could not run, a gap names it instead. `expectations`: those a scenario
    may state of what it finds, judged from its section (harness/checker/expectations/kind.py)."""

    name: str
    run: Callable[[Context], None] = lambda context: None  # a check that only adds its section sets no field
    unknown: Callable[[Context], None] = lambda context: None
    needs: tuple[str, ...] = ()
    section: Callable[[Context], Section | None] | None = None
    expectations: tuple[ExpectationKind, ...] = ()


def strict_default() -> bool:
    return os.environ.get(STRICT_ENV, "") not in ("", "0")


def run_steps(steps: list[Step], context: Context, strict: bool) -> None:
    """Run `steps` in order, check-safe unless `strict` (see the module's docstring)."""
    for step in steps:
        missing = [n for n in step.needs if n in context.failed]
        if missing:
            context.failed.add(step.name)
            step.unknown(context)
            continue
        try:
            step.run(context)
            section = step.section(context) if step.section is not None else None
            if section is not None:  # a check may have nothing to say of this run
                context.sections[step.name] = section
        except HarnessError:
            raise  # the run directory cannot be judged as asked (not the step's fault): the check stops, and says why
        except Exception as exc:
            if strict:
                raise
            context.failed.add(step.name)
            step.unknown(context)
            _record_failure(step, context, exc)


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
