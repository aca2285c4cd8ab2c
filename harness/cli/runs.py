"""The commands that run a scenario (`run`, `pipeline run`) and judge a run directory (`check`, `report`)."""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from pathlib import Path

import click

from harness.checker.summary.engines import DEFAULT_SPARK_MASTER, ENGINES
from harness.cli.app import main
from harness.cli.options import allow_unknown_option, default_run_dir, with_run_options
from harness.cli.printing import plan_text, print_verdict
from harness.outcome import EXIT_FAIL, EXIT_PASS, EXIT_UNKNOWN, exit_code, worst


def _run(
    scenario_file: Path,
    run_dir: Path | None,
    duration: float | None,
    seed: int | None,
    play_faults: bool,
    *,
    allow_unknown: bool = False,
    repeat: int = 1,
    until: float | None = None,
    bootstrap_servers: str | None = None,
    dry_run: bool = False,
    evidence_budget: int | None = None,
    judge_every: float | None = None,
):
    """One run, or (with `repeat` > 1 or `until`) runs one after another into the folder `run_dir`, each with the
    next seed; the exit code is the worst of them. `dry_run`: the scenario checked and its plan printed, nothing
    started."""
    from harness.scenario import load_scenario
    from harness.scenario.shipped import scenario_path

    scenario = load_scenario(scenario_path(scenario_file), bootstrap_servers)
    if evidence_budget is not None:
        scenario = replace(scenario, evidence_budget_bytes=evidence_budget)
    if dry_run:
        click.echo(plan_text(scenario))
        return
    if repeat == 1 and until is None:
        sys.exit(
            _run_once(
                scenario,
                run_dir or default_run_dir(scenario.name),
                duration,
                seed,
                play_faults,
                allow_unknown=allow_unknown,
                judge_every=judge_every,
            )
        )
    from harness.judging import repeated_seeds

    folder = run_dir or Path("reports")
    codes = []
    for number, run_seed in enumerate(repeated_seeds(scenario.workload.seed if seed is None else seed, repeat, until)):
        until_text = f", repeating until {time.strftime('%H:%M', time.localtime(until))}" if until else ""
        click.echo(f"run {number + 1}" + (f" of {repeat}" if until is None else until_text) + f" (seed {run_seed})")
        each = folder / f"{scenario.name}-{time.strftime('%Y%m%d-%H%M%S')}"
        codes.append(
            _run_once(
                scenario, each, duration, run_seed, play_faults, allow_unknown=allow_unknown, judge_every=judge_every
            )
        )
    click.echo(
        f"{len(codes)} runs: {codes.count(EXIT_PASS)} passed, {codes.count(EXIT_FAIL)} failed, "
        f"{codes.count(EXIT_UNKNOWN)} unknown; the trend is in {folder / 'index.html'}"
    )
    sys.exit(worst(codes))


def _run_once(
    scenario,
    run_dir: Path,
    duration: float | None,
    seed: int | None,
    play_faults: bool,
    *,
    allow_unknown: bool,
    judge_every: float | None = None,
) -> int:
    """One run, then its report: a run that failed (bad input, the environment, a job that exited at start) raises
    (exit 2) after its report is written whenever its run directory says how it ended; one interrupted raises (130)
    after its report is written."""
    from harness.judging import reported, run_and_judge
    from harness.report.index import write_index
    from harness.runner.console import Console

    console = Console()
    console.say(f"scenario {scenario.name}: evidence in {run_dir}")
    try:
        judged = run_and_judge(
            scenario, run_dir, console, duration_s=duration, seed=seed, play_faults=play_faults, judge_every=judge_every
        )
    except BaseException:
        if reported(run_dir):
            click.echo(f"reports in {run_dir}; index: {write_index(Path(run_dir).parent)}")
        raise
    summary = judged.summary
    failed = f"; stopped by themselves: {', '.join(summary.failed_streamlets)}" if summary.failed_streamlets else ""
    click.echo(
        f"{summary.acked:,} records acknowledged, {summary.unknown:,} unknown; "
        f"{summary.faults_played} of {summary.faults_planned} faults played{failed}"
    )
    if summary.error:
        click.echo(f"run {summary.status}: {summary.error}")
    click.echo(f"run directory: {summary.run_dir}")
    print_verdict(judged.report)
    _print_paths(judged.paths, Path(run_dir))
    return exit_code(judged.report.outcome, allow_unknown)


def _print_paths(paths: dict, run_dir: Path) -> None:
    from harness.report.index import write_index

    click.echo("reports: " + ", ".join(str(p) for p in paths.values()) + f"; index: {write_index(run_dir.parent)}")


def _report(run_dir: Path):
    """Check a run directory, write its reports and the folder's index, print the verdict and the paths."""
    from harness.report.write import check_and_write

    report, paths = check_and_write(run_dir)
    print_verdict(report)
    _print_paths(paths, Path(run_dir))
    return report


@main.command("run")
@with_run_options
def run_command(**options):
    """Run SCENARIO_FILE end to end: pipeline, workload, faults; keep the evidence.

    \b
    The run ends by checking the evidence and writing report.json, report.md,
    report.html and junit.xml into the run directory (and reports/index.html).

    \b
    Exit codes: 0 the run completed and every expectation passed, 1 it could
    not complete or an expectation failed, 2 bad input, 3 nothing failed but
    an expectation could not be measured (unknown; 0 with --allow-unknown),
    130 interrupted (the evidence so far is kept; nothing is left running).

    \b
    SCENARIO_FILE may name a shipped scenario: `harness run smoke`.

    \b
    Examples:
      harness run scenarios/smoke.yaml
      harness run smoke --dry-run           check it and print its plan; start nothing
      harness run scenarios/driver-kill-append.yaml --duration 60 --seed 7 --out reports/kill7
      harness run scenarios/nightly-soak.yaml --until 06:00 --out reports/nightly
      harness run nightly-soak --duration 3600 --evidence-budget 2GB
      harness run scenarios/compose.yaml --bootstrap-servers 127.0.0.1:19092
    """
    _run(play_faults=True, **options)  # the options of with_run_options, by name


@main.command("check")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print report.json's content instead of the summary.")
@click.option(
    "--engine",
    type=click.Choice(ENGINES),
    help="What reconciles the hops: numpy in memory, dense in arrays by record, spark as SQL on a cluster or out "
    "of core (the last two read columnar evidence) [default: dense where every recording is columnar, else numpy].",
)
@click.option("--master", help=f"Spark's master URL for --engine spark [{DEFAULT_SPARK_MASTER}].")
@allow_unknown_option
def check_command(run_dir: Path, as_json: bool, engine: str | None, master: str | None, allow_unknown: bool):
    """Judge the evidence in RUN_DIR again (files only: no broker) and print the verdict.

    Nothing is written. A run still in progress (its processes alive) or cut
    short is said to be so first, and what it has not delivered yet is not
    counted as lost. The engines give the same report (docs/checker.md); all
    but numpy read columnar evidence (`harness compact` converts a run recorded
    in JSON), spark's executors the same RUN_DIR path. Exit codes:
    0 every expectation passed, 1 one failed, 2 the run directory cannot be
    judged (missing, no acknowledgement log, an engine that failed), 3 none
    failed but one could not be measured (0 with --allow-unknown).

    \b
    Examples:
      harness check reports/smoke-20261121-101500
      harness check reports/smoke-20261121-101500 --json | jq .verdict
      harness check reports/nightly --engine numpy
      harness check /shared/reports/nightly --engine spark --master spark://10.0.0.5:7077
    """
    import json

    from harness.checker.summary.engines import DEFAULT
    from harness.checker.summary.engines import engine as reconciling
    from harness.report.write import judge_run

    if master and engine != "spark":
        raise click.UsageError("--master is for --engine spark")
    report = judge_run(run_dir, reconciling(engine, master) if engine else DEFAULT)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2, default=str))
    else:
        print_verdict(report)
    sys.exit(exit_code(report.outcome, allow_unknown))


@main.command("report")
@click.argument("run_dir", type=click.Path(path_type=Path))
@allow_unknown_option
def report_command(run_dir: Path, allow_unknown: bool):
    """Check RUN_DIR and (re)write its report.json, report.md, report.html and junit.xml, and the index
    of the folder it is in. Exit codes as for `check`.

    \b
    Example:
      harness report reports/smoke-20261121-101500
    """
    report = _report(run_dir)
    sys.exit(exit_code(report.outcome, allow_unknown))


@main.group()
def pipeline():
    """Pipelines without faults."""


@pipeline.command("run")
@with_run_options
def pipeline_run(**options):
    """Run SCENARIO_FILE's pipeline and workload but none of its faults; keep the evidence.

    \b
    Example:
      harness pipeline run scenarios/baseline.yaml --duration 20
    """
    _run(play_faults=False, **options)
