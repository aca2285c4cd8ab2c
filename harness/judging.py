"""One run judged: a scenario run, its run directory checked and its reports written, however the run ended.
`harness run`, `gate`, `matrix` and the benches all judge a run this way."""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from harness.checker.counts import VERDICT
from harness.checker.run_report import Report
from harness.errors import HarnessError
from harness.live_judge import LiveJudge, judge_every_s
from harness.report.write import check_and_write
from harness.runner.console import Console
from harness.runner.pipeline_start import ReadyRun
from harness.runner.run import RunSummary, run_scenario
from harness.scenario import Scenario


@dataclass(frozen=True)
class Judged:
    """A run and its judgement. `summary` is None when the run failed before it could return one (`error` says
    why); `report` is None when there was nothing to judge (a run directory without evidence or without run.json)."""

    run_dir: Path
    summary: RunSummary | None
    report: Report | None
    paths: dict = field(default_factory=dict)  # the reports written: kind -> path
    error: str | None = None
    elapsed_s: float = 0.0

    @property
    def status(self) -> str:
        """complete | failed | interrupted"""
        return self.summary.status if self.summary else "failed"

    @property
    def verdict(self) -> str:
        return self.report[VERDICT] if self.report else "unknown"

    @property
    def gate_outcome(self) -> str:
        """For a gate: the report's outcome, a run that could not complete failing whatever its report says."""
        if self.status != "complete" or self.report is None:
            return "fail"
        return self.report.outcome


def repeated_seeds(first_seed: int, repeat: int, until: float | None) -> Iterator[int]:
    """The seeds of runs one after another (`--repeat`, `--until`): the first, then the next; at least `repeat`
    runs, and until the clock time `until` (none starts after it)."""
    for number in itertools.count():
        if number >= repeat and (until is None or time.time() >= until):
            return
        yield first_seed + number


def reported(run_dir: Path) -> bool:
    """Whether the run has its reports: it began, or it ended before its workload and says why."""
    return (Path(run_dir) / "report.json").is_file()


def run_and_judge(
    scenario: Scenario,
    run_dir: Path,
    console: Console,
    *,
    duration_s: float | None = None,
    seed: int | None = None,
    play_faults: bool = True,
    keep_going: bool = False,
    judge_every: float | None = None,
    plots: bool = True,
    ready: ReadyRun | None = None,
    on_workload: Callable[[], None] | None = None,
) -> Judged:
    """Run `scenario` into `run_dir`, then check it and write its reports.

    A long run (or one given `judge_every` seconds; 0: never) is judged as it runs too (harness/live_judge.py). A run
    that raises (bad input, the environment, an interrupt) is judged first whenever its run directory allows, then the
    exception goes on, unless `keep_going` and it is a HarnessError: then it is the Judged's error (a suite or a
    matrix goes on to its next run). Without `plots` its report.html leaves its plots out (`harness report` draws
    them). `ready` and `on_workload`: see run_scenario."""
    t0 = time.monotonic()
    interval_s = judge_every_s(scenario.workload.duration_s if duration_s is None else duration_s, judge_every)
    live = LiveJudge(run_dir, interval_s, console.say).start() if interval_s else None
    try:
        summary = run_scenario(
            scenario,
            run_dir,
            duration_s=duration_s,
            seed=seed,
            play_faults=play_faults,
            console=console,
            ready=ready,
            on_workload=on_workload,
        )
    except BaseException as exc:
        if live:
            live.stop()
        report, paths = _judge_quietly(run_dir)
        if not (keep_going and isinstance(exc, HarnessError)):
            raise
        return Judged(Path(run_dir), None, report, paths, str(exc), round(time.monotonic() - t0, 1))
    if live:
        live.stop()
    try:
        report, paths = check_and_write(run_dir, plots)
    except HarnessError as exc:  # a run directory that cannot be judged (its evidence damaged)
        if not keep_going:
            raise
        return Judged(Path(run_dir), summary, None, {}, str(exc), round(time.monotonic() - t0, 1))
    return Judged(Path(run_dir), summary, report, paths, summary.error, round(time.monotonic() - t0, 1))


def _judge_quietly(run_dir: Path) -> tuple[Report | None, dict]:
    """Judge a run that raised: one that began, or one that ended before its workload (its report says how); a run
    directory too damaged or too bare to judge is left as it is (the run's own error is the one to show)."""
    try:
        return check_and_write(run_dir)
    except HarnessError:
        return None, {}
