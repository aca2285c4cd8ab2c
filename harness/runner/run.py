"""Running a scenario end to end: the pipeline, the workload, the faults, the evidence.

    start cluster -> topics -> drivers -> offset sampler -> generator
    -> chaos driver plays the seeded schedule -> drain -> stop -> complete the topics' recording

Ctrl-C or SIGTERM (raised as KeyboardInterrupt by the CLI) stops every
process and keeps the evidence written so far; run.json then says
"interrupted".
"""

from __future__ import annotations

import json
import time
import traceback
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Callable

from contract.applications import APPLICATION
from contract.roles import EGRESS
from harness.chaos.player import OpenWorkload, play, record_planned
from harness.chaos.schedule import Firing, plan
from harness.chaos.storm import BROKERS, Storm, draw_storm
from harness.checker.own_checks import keep_sources
from harness.errors import EvidenceIncomplete, HarnessError, WaitTimeout
from harness.evidence.acks import AckCounter
from harness.evidence.history import DRAIN_INCOMPLETE, RUN_ERROR, RUN_INTERRUPTED
from harness.evidence.layout import RUN_DIR_VERSION
from harness.process.arenas import bound_malloc_arenas
from harness.runner.closing import close_windows
from harness.runner.commit_recorder import CommitRecorder
from harness.runner.console import Console
from harness.runner.evidence_budget import Backlog, EvidenceBudget, pipeline_backlog
from harness.runner.pipeline_run import PipelineRun
from harness.runner.pipeline_start import ReadyRun, start_pipeline
from harness.runner.resource_sampler import ResourceSampler
from harness.runner.sampler import OffsetSampler
from harness.scenario import Scenario
from harness.scenario.fault_rules import FaultRule, unplayable
from harness.scenario.fault_rules import whole_run as whole_run_rules


@dataclass
class RunSummary:
    run_dir: str
    scenario: str
    seed: int
    duration_s: float
    status: str = "running"  # complete | interrupted | failed
    acked: int = 0
    unknown: int = 0
    faults_planned: int = 0
    faults_played: int = 0
    failed_streamlets: dict = field(default_factory=dict)  # streamlet -> error
    elapsed_s: float = 0.0
    drain_s: float = 0.0
    driver_exit_codes: dict = field(default_factory=dict)
    topics: dict = field(default_factory=dict)  # blueprint topic name -> actual topic name
    error: str | None = None
    run_dir_version: int = RUN_DIR_VERSION  # the form its files were written in (harness/evidence/layout.py)


PROBE_EVERY_S = 5.0  # how often the outputs' probes look while the run goes on, a status shown or not


class _Status:
    """The live status line: elapsed, faults, records acknowledged and delivered, lag per streamlet."""

    def __init__(
        self, run: PipelineRun, sampler: OffsetSampler, console: Console, duration: float, planned: int, begun: int
    ):
        self.run, self.sampler, self.console = run, sampler, console
        self.planned, self.begun = planned, begun  # begun: the whole-run faults, played from the start
        # "40s+": a workload with after_faults_s goes on past its duration until the faults are over
        self.length = f"{duration:.0f}s" + ("" if run.scenario.workload.after_faults_s is None else "+")
        self.acks = AckCounter(run.ack_log)
        egresses = [(n, s) for n, s in run.scenario.blueprint.streamlets.items() if s.role == EGRESS]
        self.egresses = [n for n, s in egresses if s.runs]
        self.outputs = [
            run.topic_name(t) for n, s in egresses if not s.runs for t in run.scenario.blueprint.inputs_of(n).values()
        ]
        self.probes = run.output_probes()  # an application's outputs: the rows it offered them count as delivered
        self._offered: list[int | None] = [None] * len(self.probes)  # each output's last count (kept when a read fails)
        self._looked_s: float | None = None

    def _look(self, elapsed: float) -> None:
        """Count what the outputs were offered, every few seconds whether or not a status is shown: a file output's
        probe so sees each data file written, and its export knows those removed before it (outputs/files.py)."""
        if self._looked_s is not None and elapsed - self._looked_s < PROBE_EVERY_S:
            return
        self._looked_s = elapsed
        for i, probe in enumerate(self.probes):
            offered = probe.delivered()
            self._offered[i] = self._offered[i] if offered is None else offered

    def __call__(self, elapsed: float, played: int) -> None:
        self._look(elapsed)
        if not self.console.due():
            return  # the progress files and the ack log are read only when a status will be shown
        acks = self.acks.poll()
        ends = self.sampler.log_ends()
        lags = self.run.streamlets.lags(ends)
        delivered = sum(max(self.run.progress[n].input_rows.values(), default=0) for n in self.egresses)
        if self.run.recording.recorder is not None:  # an output's records, as recorded
            delivered += sum(self.run.recording.recorder.per_topic.get(t, 0) for t in self.outputs)
        # an output whose kind cannot tell (or has not told yet) makes the total unknown: "-", never a short count
        told = None not in self._offered
        delivered_text = f"{delivered + sum(self._offered):,}" if told else "-"
        lag_text = " ".join(f"{n}={'-' if lag is None else lag}" for n, lag in lags.items())
        down = f"  down: {', '.join(self.run.failed)}" if self.run.failed else ""
        self.console.status(
            f"{elapsed:5.0f}s/{self.length}  faults {self.begun + played}/{self.planned}  "
            f"acked {acks.acked:,}  delivered {delivered_text}  lag {lag_text}{down}"
        )

    def __enter__(self) -> _Status:
        return self

    def __exit__(self, *exc) -> None:
        for probe in self.probes:
            probe.close()


def run_scenario(
    scenario: Scenario,
    run_dir: Path,
    duration_s: float | None = None,
    seed: int | None = None,
    play_faults: bool = True,
    console: Console | None = None,
    ready: ReadyRun | None = None,
    on_workload: Callable[[], None] | None = None,
) -> RunSummary:
    """Run `scenario` (its faults too, unless `play_faults` is False) and keep the evidence in `run_dir`.

    What fails before the workload starts (the cluster, a driver's first batch) raises, the evidence so far
    kept. Once the workload runs, nothing that fails ends the run before its evidence is saved: a fault that
    fails is recorded and played past, an error of the workload (the generator, the schedule) stops it, and
    either way the pipeline is drained (with a deadline) and its evidence saved, so that it can be judged.

    `ready`: the run, its pipeline started ahead of its schedule; `on_workload` is called as the workload begins
    (harness explore readies its next run then)."""
    console = console or Console()
    bound_malloc_arenas()  # before the run starts its threads
    duration = scenario.workload.duration_s if duration_s is None else duration_s
    seed = scenario.workload.seed if seed is None else seed
    storm = draw_storm(scenario.storm, scenario, seed, duration) if scenario.storm and play_faults else None
    if storm is not None:  # drawn before the run starts: its network faults' links are proxied from the start
        scenario = replace(scenario, faults=scenario.faults + storm.rules)
    rules = scenario.faults if play_faults else tuple(r for r in scenario.faults if r.fault.of_workload)
    planned = _planned(rules, seed, duration)
    summary = RunSummary(
        str(Path(run_dir).resolve()),
        scenario.name,
        seed,
        duration,
        faults_planned=len(planned.whole_run) + len(planned.firings),
    )
    t0 = time.monotonic()
    if ready is not None and ready.run_dir != Path(run_dir).resolve():
        raise HarnessError(f"{run_dir}: the run readied for it is in {ready.run_dir}")
    with ready.run if ready else PipelineRun(scenario, run_dir, console.say) as run:
        _save_resolved(run, scenario, duration, seed, planned.firings, play_faults, storm)
        summary.topics = {t.name: run.topic_name(t) for t in run.all_topics()}
        try:
            if ready is None:
                start_pipeline(run, planned.whole_run)
            else:
                ready.ready(scenario, rules)
            if on_workload is not None:
                on_workload()
            error, unfinished = _play_and_drain(run, summary, planned, console, storm)
            try:
                run.save_evidence()
            except EvidenceIncomplete as exc:
                unfinished = unfinished or f"its evidence is incomplete: {exc}"
            # a run that did not drain, or whose evidence is incomplete, is judged as unfinished (nothing called lost
            # that may have been in flight); an error of the workload alone leaves the run complete, and doubtful
            summary.status = "failed" if unfinished else "complete"
            summary.error = unfinished or error
        except KeyboardInterrupt:
            summary.status = "interrupted"
            run.history.record(RUN_INTERRUPTED)
            raise
        except Exception as exc:
            summary.status, summary.error = "failed", str(exc)
            raise
        finally:
            console.close()
            acks = AckCounter(run.ack_log).poll()
            summary.acked, summary.unknown = acks.acked, acks.unknown
            summary.failed_streamlets = dict(run.failed)
            summary.elapsed_s = round(time.monotonic() - t0, 1)
            run.layout.summary.write_text(json.dumps(asdict(summary), indent=2))
    return summary


def _play_and_drain(
    run: PipelineRun, summary: RunSummary, planned: _Planned, console: Console, storm: Storm | None
) -> tuple[str | None, str | None]:
    """The workload and its faults, with the samplers beside them, then the drain and the stop: the error that cut
    the workload short and why the pipeline did not drain (None: it did)."""
    sampler = OffsetSampler(run.kafka, [run.topic_name(t) for t in run.all_topics()], run.history).start()
    resources = ResourceSampler(run.processes, run.layout.root, run.history).start()
    commits = CommitRecorder(run.layout, _applications(run)).start()
    budget = _watch_budget(run, sampler, console)
    try:
        limits = {BROKERS: storm.max_brokers_down} if storm else {}
        cut = (lambda: budget.why) if budget else (lambda: None)
        error = _play_workload(run, summary, planned, console, sampler, limits, cut)
        return error, _drain_and_stop(run, summary, console)
    finally:
        sampler.stop()
        resources.stop()
        commits.stop()
        if budget:
            budget.stop()


def _applications(run: PipelineRun) -> list[str]:
    return [name for name, inst in run.scenario.blueprint.streamlets.items() if inst.kind == APPLICATION]


@dataclass(frozen=True)
class _Planned:
    """What a run plays: its fault rules, the timed ones' firings, the whole-run ones."""

    rules: tuple[FaultRule, ...]
    firings: list[Firing]
    whole_run: list[FaultRule]


def _planned(rules: tuple[FaultRule, ...], seed: int, duration: float) -> _Planned:
    """The timed faults' firings and the whole-run faults; a fault the workload cannot hold (a --duration shorter
    than the scenario's) is refused before anything starts, as the scenario would be."""
    cannot = unplayable(list(rules), duration)
    if cannot:
        rule = rules[cannot[0]]
        raise HarnessError(f"faults[{cannot[0]}] ({rule.kind} {rule.target}): {cannot[1]}: it would not be played")
    return _Planned(rules, plan(list(rules), seed, duration), whole_run_rules(list(rules)))


def _play_workload(
    run: PipelineRun,
    summary: RunSummary,
    planned: _Planned,
    console: Console,
    sampler: OffsetSampler,
    group_limits: dict[str, int],
    cut: Callable[[], str | None],
) -> str | None:
    """The generator and the fault schedule (`cut`: why the workload ended early, see play); returns the error that
    cut the workload short (recorded as run_error; the generator is then stopped), or None."""
    scenario, duration, seed = run.scenario, summary.duration_s, summary.seed
    after_faults = scenario.workload.after_faults_s
    until = None if after_faults is None else f"{after_faults:g}s after the last fault"
    try:
        run.generator.start(duration if until is None else None, seed)
        console.say(
            f"generator producing {scenario.workload.total_rate:g} records/s for {duration:g}s"
            + ("" if until is None else f" and until {until}")
            + f"; {summary.faults_planned} fault(s) planned (seed {seed})"
        )
        _begin_continuous_faults(run, planned.whole_run)
        overrun = max([duration] + [f.at_s for f in planned.firings]) + 300
        open_workload = (
            None if until is None else OpenWorkload(duration, after_faults, lambda: run.stop_generator(until))
        )
        summary.faults_played = len(planned.whole_run)  # begun as the workload started
        with _Status(run, sampler, console, duration, summary.faults_planned, len(planned.whole_run)) as status:
            summary.faults_played += play(
                run,
                planned.firings,
                {r.kind: r.fault for r in planned.rules},
                overrun,
                console.say,
                on_tick=status,
                open_workload=open_workload,
                group_limits=group_limits,
                cut=cut,
                total=summary.faults_planned,
            )
        _end_continuous_faults(run, planned.whole_run)
        return None
    except Exception as exc:  # HarnessError or a bug: the run is still drained, saved and judged
        error = str(exc) if isinstance(exc, HarnessError) else f"{type(exc).__name__}: {exc}"
        run.layout.log_dir.mkdir(parents=True, exist_ok=True)
        run.layout.log("run-error").write_text("".join(traceback.format_exception(exc)))
        run.history.record(RUN_ERROR, error=error)
        console.say(f"the workload stopped early: {error}")
        run.stop_generator(f"run error: {error}")
        return error


def _watch_budget(run: PipelineRun, sampler: OffsetSampler, console: Console) -> EvidenceBudget | None:
    """The evidence budget's watch, begun with the workload (None: the run has no budget)."""
    budget_bytes = run.scenario.evidence_budget_bytes
    if budget_bytes is None:
        return None
    flows = {name: (run.input_topics(name), run.output_topics(name)) for name in run.scenario.blueprint.order()}

    def backlog() -> Backlog:
        ends = sampler.log_ends()
        recorder = run.recording.recorder  # it too can fall behind under load
        recorded = (recorder.topics, recorder.records, recorder.lag(ends)) if recorder is not None else ([], 0, 0)
        lags = {**run.streamlets.lags(ends), **dict.fromkeys(run.failed, 0)}  # a streamlet that failed reads no more
        return pipeline_backlog(flows, lags, ends, recorded)

    def end_workload(why: str) -> None:
        console.say(f"ending the workload early: {why}")
        run.stop_generator(why)

    return EvidenceBudget(run.layout, budget_bytes, run.history, end_workload, backlog).start()


def _drain_and_stop(run: PipelineRun, summary: RunSummary, console: Console) -> str | None:
    """Try the undos that failed once more, let the generator finish, then drain and stop the drivers (in the data's
    order); returns why the pipeline did not drain (None: it did)."""
    for undo in run.undos.retry():
        console.say(f"fault {undo.kind} {undo.target}: still could not {undo.what}: the outcome will be unknown")
    behind = None
    try:
        run.generator.wait()
        close_windows(run)
    except WaitTimeout as exc:  # still sending: nothing can drain, the drivers are stopped all the same
        behind = str(exc)
    ending = run.streamlets.drain_and_stop(behind)
    summary.driver_exit_codes = ending.exit_codes
    if ending.behind is not None:
        run.history.record(DRAIN_INCOMPLETE, reason=ending.behind)
        console.say(f"not drained: {ending.behind}")
        return f"the pipeline did not drain: {ending.behind}"
    summary.drain_s = ending.drain_s
    console.say(f"drained in {summary.drain_s:.1f}s")
    return None


def _save_resolved(
    run: PipelineRun,
    scenario: Scenario,
    duration: float,
    seed: int,
    firings: list[Firing],
    play_faults: bool,
    storm: Storm | None,
) -> None:
    resolved = {
        "duration_s": duration,
        "after_faults_s": scenario.workload.after_faults_s,
        "seed": seed,
        "faults_played": play_faults,
        "schedule": [asdict(f) for f in firings],
        **({"storm": storm.describe()} if storm else {}),
    }
    run.layout.scenario.write_text(json.dumps({"resolved": resolved, "scenario": scenario.raw}, indent=2, default=str))
    run.topology.describe().save(run.layout.pipeline)
    keep_sources(run.scenario.checks, run.layout.own_checks)


def _begin_continuous_faults(run: PipelineRun, whole_run: list[FaultRule]) -> None:
    """Faults active for the whole workload (executor crashes, late events, resends): faults 1 to N of the run,
    begun as it starts."""
    for number, rule in enumerate(whole_run, 1):
        record_planned(run, number, rule.fault.name, rule.target)
        rule.fault.begun(run, rule.target, fault=number, **rule.params)


def _end_continuous_faults(run: PipelineRun, whole_run: list[FaultRule]) -> None:
    for rule in whole_run:
        rule.fault.ended(
            run, rule.target, **(rule.fault.finish(run, rule.target, rule.params) if rule.fault.finish else {})
        )
