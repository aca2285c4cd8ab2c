"""The checker: a run directory in, a Report out. Reads files only; no broker, Spark or network.

A check is the composition of its steps (harness/checker/step.py), in this order: reconcile every hop, and find
the first hop of each anomaly -> the egresses' arrivals tallied -> causes of loss (retention, redeploy,
re-creation, watermark, failed query) -> what a run that did not finish proves lost -> extra copies per hop (made
here or inherited, by which batch, after which fault) -> counts and verdicts (window counts of stateful pipelines)
-> the same per period of sending -> faults and recovery -> latency -> witnesses -> timeline -> resources. Then
the checks of harness/checker/checks/, each a module whose Step adds a section to the report (a new check is one
module there: docs/architecture.md), and last the expectations, the checks' own among them.
"""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path
from typing import Callable

from contract.plugins import builtin_kinds
from harness.checker import (
    anomaly_records,
    causes,
    copies,
    counts,
    expect,
    fault_results,
    hops,
    latency,
    periods,
    resources,
    snapshot,
    timeline,
    unfinished,
)
from harness.checker.anomaly_records import RECORDS
from harness.checker.causes import placed_by_neighbours
from harness.checker.counts import COUNTS, VERDICT
from harness.checker.declared import misses
from harness.checker.expect import EXPECTATIONS, end_to_end
from harness.checker.faults import doubts, fault_spans, skipped_faults
from harness.checker.hops import hop_data
from harness.checker.load import Evidence, load_evidence
from harness.checker.own_checks import own_checks
from harness.checker.run_report import Report, outcome_of
from harness.checker.selection import Selection
from harness.checker.step import Context, Step, in_order, run_steps, strict_default
from harness.checker.store_copies import kept_for_one_check
from harness.checker.summary.engines import DEFAULT, Engine, chosen
from harness.checker.summary.in_memory import count_in_memory
from harness.checker.unfinished import unfinished_reason
from harness.errors import BeyondDense
from harness.evidence.history import FAULT_PLANNED, QUERY_FAILED, TOPIC_RECREATED
from harness.evidence.layout import RunLayout

STEPS: list[Step] = in_order(
    [
        hops.STEP,
        causes.STEP,
        unfinished.STEP,
        copies.STEP,
        counts.STEP,
        periods.STEP,
        fault_results.STEP,
        latency.STEP,
        anomaly_records.STEP,
        timeline.STEP,
        resources.STEP,
    ]
)


CHECKS: list[Step] = in_order(list(builtin_kinds("harness.checker.checks", Step).values()), tuple(STEPS))


def all_steps(own: tuple[Step, ...] = ()) -> list[Step]:
    """The whole check: STEPS, the built-in checks, the scenario's `own` ones, and last the expectations (those the
    checks carry read their sections)."""
    return [*STEPS, *CHECKS, *in_order(list(own), (*STEPS, *CHECKS)), expect.STEP]


def check_run(
    run_dir: Path,
    running: tuple[str, ...] = (),
    steps: list[Step] | None = None,
    strict: bool | None = None,
    engine: Callable | str | None = DEFAULT,
) -> Report:
    """Judge a run directory. `running`: processes of the run still alive (the caller looks; the checker reads
    files only). `strict`: a step that raises fails the check (default: HARNESS_CHECK_STRICT); otherwise what
    it finds is unknown and the outcome with it. `engine`: what reconciles the hops and makes the tallies
    (harness/checker/summary/engines.py; None: numpy, in memory; DEFAULT: chosen by the evidence)."""
    if engine == DEFAULT:
        evidence, engine = _counted_first(Path(run_dir), chosen(run_dir), running, fallback=True)
    else:
        evidence, engine = _counted_first(Path(run_dir), engine, running)
    query_failures = [
        {"streamlet": e.get("streamlet"), "ts_ms": e["ts_ms"], "error": str(e.get("error", ""))[:2000]}
        for e in evidence.history
        if e["event"] == QUERY_FAILED
    ]
    own, unloaded = own_checks(evidence.pipeline.checks, RunLayout(evidence.root).own_checks)
    context = Context(
        evidence,
        running,
        unfinished_reason(evidence, running),
        fault_spans(evidence.history),
        list(evidence.gaps) + unloaded,
        query_failures,
        doubts(evidence.history),
        misses(evidence.history),
        engine=engine,
        own_checks=tuple(own),
    )
    context.doubts += unloaded
    run_steps(
        all_steps(context.own_checks) if steps is None else steps,
        context,
        strict_default() if strict is None else strict,
    )
    if context.unfinished:
        context.gaps.insert(
            0,
            context.unfinished
            + "; counts are so far, and a missing record is lost only where the evidence proves it (the rest is "
            "undelivered)",
        )
    return _report(context)


def _counted_first(
    run_dir: Path, engine: Callable | None, running: tuple[str, ...], fallback: bool = False
) -> tuple[Evidence, Callable]:
    """The evidence the steps read and what reconciles its hops. Without an engine (None), numpy: the evidence loaded
    whole and counted in memory. With one: every record counted where it lies first, then only the rows of the
    records with anything to say loaded (the rest of the check runs on those and the engine's tallies), where the
    steps can judge the run so; otherwise the whole evidence, and the engine's reconciliation in its turn. A run
    still going is read as one snapshot (snapshot.py), each pass seeing the rows the first saw, by an engine reading
    in this process. `fallback`: evidence the engine cannot hold in its arrays (BeyondDense) is counted in memory
    instead, decided here, before any step runs."""
    if engine is None:
        return load_evidence(run_dir), count_in_memory
    try:  # the store's large tables read from SQLite once, not in each pass
        with kept_for_one_check(), snapshot.taken() if running else nullcontext():
            structure = load_evidence(run_dir, Selection.nothing())
            ours = isinstance(engine, Engine)
            if judged_from_notable(structure, ours and engine.complete) and (not running or ours and engine.in_process):
                counted = engine(structure, hop_data(structure), fault_spans(structure.history))
                return load_evidence(run_dir, Selection(structure.ids, counted[1].notable)), lambda *_: counted
    except BeyondDense:
        if not fallback:
            raise
        return load_evidence(run_dir), count_in_memory
    return load_evidence(run_dir), engine


def judged_from_notable(evidence: Evidence, complete: bool = False) -> bool:
    """Whether the steps judge the run from its notable records' rows and the engine's tallies alone (a retention
    shrink's deleted ranges are among them; a run that did not finish, or is still going, proves its missing records
    lost from their own rows, and the engine gives each key's last logged record; the copies without a source's
    header it counts too). With a `complete` engine, it judges a windowed count's cells and names the records a
    re-created source's causes read (eras.py) and those placing a record the recording of a topic missed where a
    retention shrink deleted (summary/dense_placed.py); otherwise such runs are loaded whole. A run still going is
    read as one snapshot (`_counted_first`)."""
    history = evidence.history
    return complete or not (
        any(e.windowed for e in evidence.egresses)
        or any("count" in rows.columns for rows in evidence.topics.values())
        or any(e["event"] == TOPIC_RECREATED for e in history)
        or placed_by_neighbours(history)
    )


def _report(context: Context) -> Report:
    """The Report of what the check found: each key a step of the whole check reports (what it found, or its
    unknown() where no step of this check finds it), and the record sets."""
    evidence = context.evidence
    shown = [key for step in all_steps(context.own_checks) for key in step.writes if key.reported] + [RECORDS]
    found = {key: context.get(key) for key in shown}
    if context.known(VERDICT):
        found[VERDICT], found[COUNTS] = end_to_end(context)
    return Report(
        run_dir=str(evidence.root),
        scenario=evidence.pipeline.name,
        description=evidence.pipeline.description.strip(),
        status="running" if context.running else str(evidence.run.get("status", "unknown")),
        outcome=outcome_of(found[EXPECTATIONS], found[VERDICT], context.unfinished, context.doubts, context.misses),
        run_info=_run_info(evidence, context.spans),
        found=found,
        gaps=context.gaps,
        unfinished=context.unfinished,
        doubts=context.doubts,
        query_failures=context.query_failures,
        skipped_faults=skipped_faults(evidence.history),
        fault_misses=context.misses,
        sections=context.sections,
    )


def _run_info(evidence: Evidence, spans) -> dict:
    resolved = evidence.resolved
    return {
        "seed": resolved.get("seed"),
        "duration_s": resolved.get("duration_s"),
        "after_faults_s": resolved.get("after_faults_s"),
        "faults_planned": _planned(evidence),
        "faults_played": len(spans),
        "versions": evidence.versions,
        **({"storm": resolved["storm"]} if isinstance(resolved.get("storm"), dict) else {}),
        **({"error": str(evidence.run["error"])} if evidence.run.get("error") else {}),  # why the run failed
    }


def _planned(evidence: Evidence) -> int | None:
    """How many faults the run planned, the whole-run ones too (as many as fault_begun can play): its fault_planned
    events; in an older run, its schedule's timed faults (None: not known)."""
    planned = sum(e["event"] == FAULT_PLANNED for e in evidence.history)
    schedule = evidence.resolved.get("schedule")
    if planned or not evidence.resolved.get("faults_played", True):
        return planned
    return len(schedule) if isinstance(schedule, list) else None
