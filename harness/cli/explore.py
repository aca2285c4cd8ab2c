"""`harness explore`: the schedule search (harness.chaos.explore) run for real, each schedule a judged run in the
output folder, and what it found written there: explore.json, explore.html, and minimal.yaml (last)."""

from __future__ import annotations

import html
import json
import re
import sys
import time
from pathlib import Path

import click
import yaml

from harness.cli.app import main
from harness.cli.options import default_run_dir
from harness.errors import HarnessError
from harness.search_runs import RunAhead, judge_runs, scenario_raw, set_up, shared_cluster

BUDGET = re.compile(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?")


def budget_seconds(text: str) -> float:
    """'30m', '1h', '90s', '1h30m' -> seconds."""
    match = BUDGET.fullmatch(text.strip().lower())
    if not match or not any(match.groups()):
        raise click.BadParameter(f"{text!r}: expected a span like 20m, 1h or 90s")
    hours, minutes, seconds = (int(g or 0) for g in match.groups())
    return float(hours * 3600 + minutes * 60 + seconds)


@main.command("explore")
@click.argument("scenario_file", type=click.Path(path_type=Path))
@click.option("--budget", default="30m", show_default=True, help="Time for the search and the shrinking.")
@click.option("--seed", type=int, default=1, show_default=True, help="The same seed draws the same schedules.")
@click.option(
    "--runs",
    "k",
    type=click.IntRange(1, 10),
    default=2,
    show_default=True,
    help="Runs of a shrinking candidate: it reproduces the failure when any of them does.",
)
@click.option(
    "--replays",
    type=click.IntRange(0, 20),
    default=3,
    show_default=True,
    help="Replays of the minimal schedule, for its reproduction rate.",
)
@click.option("--collect", is_flag=True, help="Go on after the first failure; group failures by signature.")
@click.option(
    "--settle",
    type=click.FloatRange(0, 3600),
    default=60.0,
    show_default=True,
    help="On a cluster one runs: how long a run waits for it to be healthy before it is discarded.",
)
@click.option("--out", type=click.Path(path_type=Path), default=None, help="Output folder [reports/explore-NAME-TIME].")
def explore_command(
    scenario_file: Path, budget: str, seed: int, k: int, replays: int, collect: bool, settle: float, out
):
    """Search fault schedules for one that breaks SCENARIO_FILE's expectations; shrink it to a minimal one.

    \b
    Schedules are drawn from the scenario's `explore` section (harness docs explore):
    fault kinds, targets, moments, how many, the workload of each run. The first
    schedule whose run fails an expectation is shrunk (faults dropped, made
    simpler, the workload shortened; a candidate reproduces the failure when any
    of --runs runs fails the same way), then replayed --replays times.
    OUT/minimal.yaml is the smallest failing schedule as a scenario `harness run`
    takes; OUT/explore.html links every run's report. On the embedded cluster
    each run has a fresh one; on a cluster one runs (cluster.bootstrap_servers)
    each run waits until it is healthy (every broker live, every partition in
    sync, no listed container paused) and is discarded if it stays unhealthy.

    \b
    Exit codes: 1 a counterexample was found, 0 none within the budget, 3 no run
    could be judged, 2 bad input.

    \b
    Examples:
      harness explore explore-append --budget 20m --out reports/explore
      harness explore my-pipeline.yaml --budget 1h --seed 7 --collect
    """
    from harness.chaos.explore import empty_space, explore, said, started_ahead
    from harness.runner.console import Console
    from harness.scenario import load_scenario
    from harness.scenario.shipped import scenario_path

    path = scenario_path(scenario_file)
    scenario = load_scenario(path)
    if scenario.explore is None:
        raise HarnessError(f"{path}: no explore section: say which faults to draw (harness docs explore)")
    spec, seconds = scenario.explore, budget_seconds(budget)
    empty = empty_space(spec, scenario)
    if empty:
        raise HarnessError(f"{path}: {empty}")
    out = out or default_run_dir(f"explore-{scenario.name}")
    out.mkdir(parents=True, exist_ok=True)
    console = Console()
    console.say(
        f"explore {scenario.name}: up to {spec.space.faults} fault(s) per schedule, {spec.workload_s:g}s workloads, "
        f"seed {seed}, budget {budget}; runs in {out}/runs"
    )
    folder = path.resolve().parent
    shared = shared_cluster(scenario, out, settle)
    console.say(
        shared.describe()
        if shared
        else "each run has an embedded cluster of its own, started fresh: no run's faults reach the next"
    )
    run_dirs: list[Path | None] = []  # the nth run's folder (None: discarded, not played)

    def progress(found) -> None:
        run = found.runs[-1]
        faults = "; ".join(f.label() for f in run.schedule) or "no fault"
        console.say(f"run {run.number} ({run.phase}, {run.seconds:.0f}s): {said(run.signature)}  [{faults}]")

    ahead = RunAhead(None if shared or not started_ahead(spec, scenario) else set_up(scenario, folder, seed), out)
    judge = judge_runs(scenario, folder, out, seed, shared, console, run_dirs, ahead)
    t0 = time.monotonic()
    try:
        found = explore(scenario, spec, judge, seconds, seed, k=k, replays=replays, collect=collect, on_run=progress)
    finally:
        ahead.close()
    elapsed = time.monotonic() - t0
    write_outputs(out, scenario, folder, found, seed, elapsed, run_dirs)
    click.echo(summary_text(found, spec, out, elapsed))
    sys.exit(found.exit_code)


def summary_text(found, spec, out: Path, elapsed: float) -> str:
    from harness.chaos.explore import said

    per_hour = len(found.runs) / elapsed * 3600 if elapsed > 0 else 0.0
    lines = [f"{len(found.runs)} run(s) in {elapsed / 60:.1f} min ({per_hour:.0f} runs/hour)"]
    if found.stopped:
        lines.append(f"stopped: {found.stopped}")
    if not found.failures:
        kinds = ", ".join(spec.space.kinds) if spec.space.kinds else "every kind this pipeline can play"
        lines.append(
            f"no counterexample: {found.drawn} schedule(s) of up to {spec.space.faults} fault(s) ({kinds}), "
            f"{found.unjudged} could not be judged"
        )
        return "\n".join(lines)
    shrunk = found.shrunk
    lines.append(f"counterexample: {said(shrunk.signature)}")
    lines += [f"  {f.label()}" for f in shrunk.schedule] or ["  no fault at all: the failure is not the faults'"]
    state = "minimal" if shrunk.complete else "smallest found before the budget ended"
    rate = "" if found.reproduced is None else f", reproduced in {found.reproduced:.0%} of its replays"
    lines.append(f"{state}: {len(shrunk.schedule)} fault(s), {shrunk.workload_s:g}s workload{rate}")
    lines.append(f"replay: harness run {out / 'minimal.yaml'}")
    return "\n".join(lines)


def _faults_text(faults: list[dict]) -> str:
    return "; ".join(f"{f['kind']} {f['target']} at {f['start_s']}s" for f in faults) or "no fault"


def _report(run_dir: Path | None, out: Path) -> str | None:
    return None if run_dir is None else str((run_dir / "report.html").relative_to(out))


def _row(run: dict) -> str:
    link = f'<a href="{html.escape(run["report"])}">report</a>' if run["report"] else ""
    return (
        f"<tr><td>{run['number']}</td><td>{run['phase']}</td><td>{html.escape(run['outcome'])}</td>"
        f"<td>{html.escape(run['said'])}</td><td>{html.escape(_faults_text(run['faults']))}</td>"
        f"<td>{link}</td></tr>"
    )


def outcome(signature) -> str:
    """pass, fail, unjudged or discarded: a run's outcome as explore.json lists it."""
    from harness.chaos.explore import DISCARDED, UNJUDGED

    if signature is None:
        return "pass"
    return signature if signature in (UNJUDGED, DISCARDED) else "fail"


def write_outputs(out: Path, scenario, folder: Path, found, seed: int, elapsed: float, run_dirs: list[Path]) -> None:
    """explore.json, explore.html, then minimal.yaml (last: its presence says the search ended)."""
    from harness.chaos.explore import said

    runs = [
        {
            "number": r.number,
            "phase": r.phase,
            "faults": [f.as_yaml() for f in r.schedule],
            "workload_s": r.workload_s,
            "outcome": outcome(r.signature),
            "signature": list(map(list, r.signature)) if outcome(r.signature) == "fail" else None,
            "said": said(r.signature),
            "seconds": round(r.seconds, 1),
            "report": _report(run_dirs[r.number - 1], out),
        }
        for r in found.runs
    ]
    shrunk = found.shrunk
    data = {
        "scenario": scenario.name,
        "seed": seed,
        "seconds": round(elapsed, 1),
        "runs_per_hour": round(len(found.runs) / elapsed * 3600, 1) if elapsed > 0 else None,
        "schedules_drawn": found.drawn,
        "stopped": found.stopped,
        "failures": [
            {"signature": list(map(list, s)), "said": said(s), "schedules": len(v)} for s, v in found.failures.items()
        ],
        "minimal": None
        if shrunk is None
        else {
            "faults": [f.as_yaml() for f in shrunk.schedule],
            "workload_s": shrunk.workload_s,
            "complete": shrunk.complete,
            "reproduced": found.reproduced,
            "trace": [
                {
                    "why": s.why,
                    "faults": [f.as_yaml() for f in s.schedule],
                    "workload_s": s.workload_s,
                    "kept": s.kept,
                    "signatures": [said(x) for x in s.signatures],
                }
                for s in shrunk.trace
            ],
        },
        "runs": runs,
    }
    (out / "explore.json").write_text(json.dumps(data, indent=2, default=str))
    rows = "".join(_row(r) for r in runs)
    (out / "explore.html").write_text(
        f"<!doctype html><meta charset=utf-8><title>explore {html.escape(scenario.name)}</title>"
        f"<h1>explore {html.escape(scenario.name)}</h1><p>{len(runs)} runs, seed {seed}</p>"
        "<table border=1><tr><th>run</th><th>phase</th><th>outcome</th><th>signature</th><th>faults</th><th></th></tr>"
        f"{rows}</table>"
    )
    if shrunk is not None:
        minimal = scenario_raw(scenario.raw, folder, shrunk.schedule, shrunk.workload_s, seed)
        minimal["name"] = f"{scenario.name}-minimal"
        minimal["description"] = (
            f"The smallest schedule `harness explore` found failing {scenario.name}: "
            f"it {said(shrunk.signature)}, seed {seed}."
        )
        (out / "minimal.yaml").write_text(yaml.safe_dump(minimal, sort_keys=False))
