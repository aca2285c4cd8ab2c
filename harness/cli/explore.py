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

BUDGET = re.compile(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?")


def budget_seconds(text: str) -> float:
    """'30m', '1h', '90s', '1h30m' -> seconds."""
    match = BUDGET.fullmatch(text.strip().lower())
    if not match or not any(match.groups()):
        raise click.BadParameter(f"{text!r}: expected a span like 20m, 1h or 90s")
    hours, minutes, seconds = (int(g or 0) for g in match.groups())
    return float(hours * 3600 + minutes * 60 + seconds)


def self_contained(raw: dict, folder: Path) -> dict:
    """The scenario with every path it names made absolute, so a copy of it runs from any folder."""

    def absolute(value):
        return value if not isinstance(value, str) or Path(value).is_absolute() else str((folder / value).resolve())

    raw = json.loads(json.dumps(raw))  # a deep copy of plain data
    if isinstance(raw.get("imports"), list):
        raw["imports"] = [absolute(p) for p in raw["imports"]]
    for app in (raw.get("applications") or {}).values():
        if isinstance(app, dict):
            app["cwd"] = absolute(app.get("cwd", "."))
    record = (raw.get("workload") or {}).get("record")
    for name in ("sample", "avro"):
        if isinstance(record, dict) and name in record:
            record[name] = absolute(record[name])
    for output in (raw.get("outputs") or {}).values():
        if isinstance(output, dict) and "avro" in output:
            output["avro"] = absolute(output["avro"])
    return raw


def scenario_raw(raw: dict, folder: Path, schedule, workload_s: float, seed: int) -> dict:
    """The scenario file of one schedule: its faults, workload length and seed; no storm, no explore section."""
    raw = {k: v for k, v in self_contained(raw, folder).items() if k not in ("storm", "explore")}
    raw["workload"] = {**raw["workload"], "duration_s": workload_s, "seed": seed}
    raw["workload"].pop("after_faults_s", None)
    raw["faults"] = [fault.as_yaml() for fault in schedule]
    return raw


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
    shared = _shared_cluster(scenario, out, settle)
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

    ahead = _Ahead(None if shared or not started_ahead(spec, scenario) else _set_up(scenario, folder, seed), out)
    judge = _judge(scenario, folder, out, seed, shared, console, run_dirs, ahead)
    t0 = time.monotonic()
    try:
        found = explore(scenario, spec, judge, seconds, seed, k=k, replays=replays, collect=collect, on_run=progress)
    finally:
        ahead.close()
    elapsed = time.monotonic() - t0
    write_outputs(out, scenario, folder, found, seed, elapsed, run_dirs)
    click.echo(summary_text(found, spec, out, elapsed))
    sys.exit(found.exit_code)


def _shared_cluster(scenario, out: Path, settle_s: float):
    """The cluster one runs that every run shares (None: each run starts an embedded one of its own)."""
    from harness.chaos.health import SharedCluster
    from harness.runner.kafka_service import external_access

    cluster = scenario.cluster
    if not cluster.bootstrap_servers:
        return None
    return SharedCluster(external_access(scenario, None, out), cluster.containers, settle_s)


def _set_up(scenario, folder: Path, seed: int):
    """The scenario every run of the search starts as: no fault, the search's workload."""
    from harness.scenario.parse import parse_scenario

    return parse_scenario(scenario_raw(scenario.raw, folder, (), scenario.explore.workload_s, seed), folder)


class _Ahead:
    """The search's next run, its pipeline started as the workload of the run before begins (ReadyRun,
    harness/runner/pipeline_start.py): a run's fixed cost then overlaps the run before it. `scenario`, what each run
    starts as, is None when runs cannot be started so (they share a cluster, or a fault of the space shapes a run's
    start)."""

    def __init__(self, scenario, out: Path):
        self.scenario = scenario
        self.out = out
        self.next = None  # the ReadyRun of the next run

    def take(self):
        """The next run's ReadyRun, if one was started."""
        ready, self.next = self.next, None
        return ready

    def begin(self, number: int):
        """What to call as a run's workload begins: the start of run `number`, after it (None: runs are not started
        ahead)."""
        if self.scenario is None:
            return None

        def start() -> None:
            from harness.runner.console import Console
            from harness.runner.pipeline_start import ReadyRun

            self.next = ReadyRun(self.scenario, self.out / "runs" / f"{number:03d}", Console(quiet=True).say).begin()

        return start

    def close(self) -> None:
        """The next run stopped and removed when the search ends before it plays (its folder was never a run's)."""
        ready = self.take()
        if ready is not None:
            ready.discard()


def _judge(scenario, folder: Path, out: Path, seed: int, shared, console, run_dirs: list, ahead: _Ahead):
    """judge(schedule, workload_s, phase): one run of the schedule in OUT/runs/NNN, its failure signature; it starts
    the next run as its workload begins (`ahead`)."""
    from harness.chaos.explore import ANOMALIES, DISCARDED, signature
    from harness.judging import run_and_judge
    from harness.runner.console import Console
    from harness.scenario.parse import parse_scenario

    def judge(schedule, workload_s: float, phase: str):
        problems = shared.unhealthy() if shared else []
        if problems:
            console.say(f"the cluster is not healthy, run discarded: {'; '.join(problems[:5])}")
            run_dirs.append(None)
            return DISCARDED
        number = len(run_dirs) + 1
        run_dir = out / "runs" / f"{number:03d}"  # named before its phase is known: it may be started ahead
        run_dirs.append(run_dir)
        variant = parse_scenario(scenario_raw(scenario.raw, folder, schedule, workload_s, seed), folder)
        # Its plots are left out: a search judges its runs by the hundred (`harness report RUN` draws them).
        judged = run_and_judge(
            variant,
            run_dir,
            Console(quiet=True),
            keep_going=True,
            plots=False,
            ready=ahead.take(),
            on_workload=ahead.begin(number + 1),
        )
        report = judged.report
        if judged.status != "complete" or report is None:
            return signature("unknown", [], {})
        failed = [e.name for e in report.expectations if e.status == "fail"]
        return signature(report.outcome, failed, {name: getattr(report.counts, name, None) for name in ANOMALIES})

    return judge


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
