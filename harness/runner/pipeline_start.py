"""A run's pipeline started: everything before its workload, at once (run_scenario) or ahead of its schedule
(ReadyRun).

`harness explore` readies its next run while one plays, so that a run's fixed cost (the brokers' start, the drivers'
up to their first batch, the preflight: docs/performance.md) overlaps the run before it instead of adding to it. A
run can be readied so only when no fault of its schedule shapes its start (FaultKind.shapes_start): the schedule is
drawn, or shrunk, once the run before it has been judged.
"""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path
from typing import Callable

from harness.errors import HarnessError
from harness.evidence.history import OUTPUT_PREPARED
from harness.process.priority import Niced, renice, renice_threads
from harness.runner.pipeline_run import PipelineRun
from harness.runner.preflight import preflight
from harness.scenario import Scenario
from harness.scenario.fault_rules import FaultRule

# A run started ahead takes the CPU the run playing leaves: its start must not slow that run's drivers (a restart, a
# drain). Its processes and the harness's threads its start begins are niced; given back as the run is handed over.
AHEAD_NICENESS = 10
DISCARD_PATIENCE_S = 120.0  # a start's step in flight when a readied run is discarded (a broker's start, a preflight)


def start_pipeline(run: PipelineRun, whole_run: list[FaultRule]) -> None:
    """Everything a run does before its workload: another Spark's environment (built before anything starts), the
    brokers, the topics, the schema registry, the outputs, the topics' recording, the whole-run faults' preparations,
    the drivers up to their first batch, the preflight."""
    run.prepare_spark()
    run.brokers.start()
    run.spark.start()
    run.save_versions()
    run.brokers.create_topics()
    run.registry.start()
    _prepare_outputs(run)
    run.recording.start()
    for rule in (r for r in whole_run if r.fault.prepare):
        rule.fault.prepare(run, rule.target, rule.params)
    run.streamlets.start_all()
    preflight(run)


def _prepare_outputs(run: PipelineRun) -> None:
    """Each output its kind prepares (a table and its audit), before the applications start."""
    for name, sink in run.sinks.items():
        prepared = sink.prepare()
        if prepared is not None:
            run.history.record(OUTPUT_PREPARED, output=name, **prepared)


def set_up(raw: dict) -> dict:
    """What of a scenario file a run's start depends on: all of it but its faults and its workload's length."""
    return {
        **{k: v for k, v in raw.items() if k != "faults"},
        "workload": {k: v for k, v in raw.get("workload", {}).items() if k != "duration_s"},
    }


class ReadyRun:
    """A run whose pipeline starts in a thread of its own (`begin`) before its schedule is known; run_scenario plays
    it once `ready` hands it over. `scenario` is its set-up: the scenario it is played with may differ from it only in
    its faults (none shaping a start) and its workload's length."""

    def __init__(self, scenario: Scenario, run_dir: Path, say: Callable[[str], None]):
        self.scenario = scenario
        self.run = PipelineRun(scenario, run_dir, say)  # `say`: where its notes go, from its start to its end
        self._error: BaseException | None = None
        self._niceness = os.getpriority(os.PRIO_PROCESS, 0)  # the harness's own, given back as the run is handed over
        self._thread = threading.Thread(target=self._start, name=f"ready-{self.run.run_id}", daemon=True)

    @property
    def run_dir(self) -> Path:
        return self.run.layout.root

    def begin(self) -> ReadyRun:
        self._thread.start()
        return self

    def _start(self) -> None:
        try:
            # this thread's alone (Linux), and so the threads it starts; its processes' sessions as they appear
            os.setpriority(os.PRIO_PROCESS, 0, self._niceness + AHEAD_NICENESS)
            with Niced(self._pids, self._niceness + AHEAD_NICENESS):
                start_pipeline(self.run, [])
        except BaseException as exc:  # raised where the run is played (ready)
            self._error = exc

    def ready(self, scenario: Scenario, rules: tuple[FaultRule, ...]) -> PipelineRun:
        """The run, its pipeline started, to play `scenario`'s workload and `rules`; raises what its start raised."""
        shaping = sorted({r.kind for r in rules if r.fault.shapes_start})
        if shaping:
            raise HarnessError(f"a run readied before its schedule cannot play {', '.join(shaping)}: it shapes a start")
        if set_up(scenario.raw) != set_up(self.scenario.raw):
            raise HarnessError(f"{self.run_dir}: readied for another scenario than {scenario.name}")
        self._thread.join()
        if self._error is not None:
            raise self._error
        self._give_back_priority()
        return self.run

    def _pids(self) -> list[int]:
        return [proc.pid for proc in self.run.processes()]

    def _give_back_priority(self) -> None:
        """Its processes and the threads of this process its start began at the harness's own niceness again. Where
        that is not allowed (RLIMIT_NICE: not root) the run plays as niced as the next run's start."""
        renice(self._pids(), self._niceness)
        renice_threads(self._niceness)  # the next run's start is not begun: no thread is niced but this run's

    def discard(self) -> None:
        """Stop it unplayed and remove its folder: it was never a run. Its supervisor is closed first, so that a driver
        its start would launch next is refused and the start ends."""
        self.run.supervisor.close()
        if self._thread.ident is not None:  # begun
            self._thread.join(timeout=DISCARD_PATIENCE_S)
        self.run.close()
        shutil.rmtree(self.run_dir, ignore_errors=True)
