"""The schedule search's runs (harness.chaos.explore, run for real by `harness explore`): each schedule a judged run
in the search's output folder, the scenario of each made whole so that it runs from any folder, the next run's
pipeline started as the workload of the one before begins, and a cluster one runs shared by every run."""

from __future__ import annotations

import json
from pathlib import Path


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


def shared_cluster(scenario, out: Path, settle_s: float):
    """The cluster one runs that every run shares (None: each run starts an embedded one of its own)."""
    from harness.chaos.health import SharedCluster
    from harness.runner.kafka_service import external_access

    cluster = scenario.cluster
    if not cluster.bootstrap_servers:
        return None
    return SharedCluster(external_access(scenario, None, out), cluster.containers, settle_s)


def set_up(scenario, folder: Path, seed: int):
    """The scenario every run of the search starts as: no fault, the search's workload."""
    from harness.scenario.parse import parse_scenario

    return parse_scenario(scenario_raw(scenario.raw, folder, (), scenario.explore.workload_s, seed), folder)


class RunAhead:
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


def judge_runs(scenario, folder: Path, out: Path, seed: int, shared, console, run_dirs: list, ahead: RunAhead):
    """judge(schedule, workload_s, phase): one run of the schedule in OUT/runs/NNN, its failure signature; it starts
    the next run as its workload begins (`ahead`)."""
    from harness.chaos.explore import ANOMALIES, DISCARDED, signature
    from harness.checker.counts import COUNTS
    from harness.checker.expect import EXPECTATIONS
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
        failed = [e.name for e in report[EXPECTATIONS] if e.status == "fail"]
        return signature(report.outcome, failed, {name: getattr(report[COUNTS], name, None) for name in ANOMALIES})

    return judge
