"""Running a matrix: every cell's runs one after another, each checked and reported, the matrix's own report
rewritten after every run. A matrix cut short keeps its finished runs; the same command resumes it.

    out/
      matrix.json, matrix.md, matrix.html     the grid so far (rewritten after every run)
      runs/<row>--<column>--seed<N>/          each run's directory, with its own reports
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path

from contract.roles import EGRESS
from harness.checker.checks.throughput import records_per_s
from harness.checker.counts import COUNTS, HOP_FINDINGS
from harness.checker.expect import EXPECTATIONS
from harness.checker.fault_results import FAULTS
from harness.checker.latency import LATENCY
from harness.checker.timeline import TIMELINE
from harness.files import write_atomically
from harness.judging import Judged, run_and_judge
from harness.matrix.render import cells_json, render_html, render_markdown
from harness.matrix.spec import Cell, MatrixSpec
from harness.matrix.state import STATE_VERSION, MatrixState, RunResult, load_state
from harness.runner.console import Console


def save(out: Path, state: MatrixState) -> None:
    data = {"state_version": STATE_VERSION, **asdict(state), "cells": cells_json(state)}
    write_atomically(out / "matrix.json", json.dumps(data, indent=2))
    write_atomically(out / "matrix.md", render_markdown(state))
    write_atomically(out / "matrix.html", render_html(state))


def _result(cell: Cell, seed: int, out: Path, judged: Judged) -> RunResult:
    """The cell's row of one judged run; a run with nothing to judge has every figure unknown."""
    where = (cell.row, cell.column, seed, str(judged.run_dir.relative_to(out)), judged.status, judged.verdict)
    report = judged.report
    if report is None:
        return RunResult(*where, "fail", None, None, None, None, None, None, 0, None, 0, judged.elapsed_s, 0)
    egress_copies = [h.copies for h in report[HOP_FINDINGS] if h.kind == EGRESS and h.copies is not None]

    def total(values: list[int | None]) -> int | None:
        return None if not values or None in values else sum(values)

    recovering = [f for f in report[FAULTS] if f.recovers]
    measured = [f.recovery_s for f in recovering if f.recovery_s is not None]
    c = report[COUNTS]
    return RunResult(
        *where,
        judged.gate_outcome,
        c.acked,
        c.lost,
        c.duplicated_deliveries,
        c.duplicated_in_state,
        total([h.extra_in_state for h in egress_copies]),
        total([h.absorbed for h in egress_copies]),
        int(report.run_info.get("faults_played") or 0),
        max(measured) if measured else None,
        len(recovering) - len(measured),
        judged.elapsed_s,
        len(report[EXPECTATIONS]),
        (report.run_info.get("versions") or {}).get("pyspark"),
        records_per_s(c.acked, (report[TIMELINE] or {}).get("marks", {})),
        report[LATENCY].p50_s if report[LATENCY] else None,
        report[LATENCY].p99_s if report[LATENCY] else None,
        (report.run_info.get("versions") or {}).get("kafka_broker"),
    )


def _set_aside(run_dir: Path) -> None:
    """A run a previous invocation did not finish: kept beside, never deleted (it is evidence)."""
    if run_dir.exists():
        aside = run_dir.with_name(f"{run_dir.name}.cut-{time.strftime('%Y%m%d-%H%M%S')}")
        run_dir.rename(aside)


def _left(state: MatrixState, remaining: int, duration_s: float | None) -> str:
    """The time left: the mean of this matrix's runs so far (a guess before the first), times the runs left."""
    past = [r.elapsed_s for r in state.runs]
    mean = sum(past) / len(past) if past else (duration_s or 60) + 90
    minutes = mean * remaining / 60
    return f"about {minutes:.0f} min left" if minutes >= 1 else "under a minute left"


def run_matrix(spec: MatrixSpec, out: Path, console: Console) -> MatrixState:
    """Run every cell's runs not done yet (resuming what `out` holds for this matrix) and write the grid."""
    out.mkdir(parents=True, exist_ok=True)
    state = load_state(out, spec)
    todo = [
        (cell, seed) for cell in spec.cells for seed in spec.seeds() if state.done(cell.row, cell.column, seed) is None
    ]
    total = len(spec.cells) * spec.repeats
    if len(todo) < total:
        console.say(f"resuming: {total - len(todo)} of {total} runs already done in {out}")
    state.finished = not todo
    save(out, state)
    try:
        for index, (cell, seed) in enumerate(todo):
            number = total - len(todo) + index + 1
            run_dir = out / "runs" / f"{cell.slug}--seed{seed}"
            _set_aside(run_dir)
            console.say(
                f"[{number}/{total}] {cell.row} x {cell.column}, seed {seed}: evidence in {run_dir}; "
                + _left(state, total - number + 1, spec.duration_s)
            )
            judged = run_and_judge(
                cell.scenario, run_dir, console, duration_s=spec.duration_s, seed=seed, keep_going=True
            )
            if judged.summary is None:  # this run could not complete; the matrix goes on, the cell says so
                console.say(
                    f"[{number}/{total}] {cell.row} x {cell.column}, seed {seed}: the run could not complete: "
                    f"{judged.error}"
                )
            elapsed = judged.elapsed_s
            result = _result(cell, seed, out, judged)
            state.runs.append(result)
            if not state.versions and judged.report is not None:
                state.versions = judged.report.run_info.get("versions") or {}
            state.elapsed_s = round(state.elapsed_s + elapsed, 1)
            save(out, state)
            console.say(
                f"[{number}/{total}] {cell.row} x {cell.column}, seed {seed}: {result.verdict}, "
                f"lost {_n(result.lost)}, duplicated deliveries {_n(result.duplicated_deliveries)} ({elapsed:.0f}s)"
            )
        state.finished = True
    finally:
        save(out, state)
    return state


def _n(value: int | None) -> str:
    return "unknown" if value is None else f"{value:,}"
