"""The streamlets' drivers of one run: their settings, their start (and restarts), their first batches, their exits
recorded once, the drain and the stop in the data's order, and the egresses' final states exported after it."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from contract.applications import APPLICATION, REAL_TIME
from contract.egress import EXPORTED, MAIN_QUERY
from harness.errors import HarnessError, WaitTimeout
from harness.evidence.checkpoint import CheckpointFollower, committed_positions
from harness.evidence.history import (
    DRAINED,
    PROCESS_EXITED,
    PROCESS_STARTED,
    PROCESS_STOPPED,
    QUERY_FAILED,
    STATE_EXPORTED,
)
from harness.evidence.progress import ProgressFollower
from harness.evidence.recording_forms import COLUMNAR
from harness.process import ManagedProcess
from harness.runner.applications import misplaced_checkpoint, start_application
from harness.runner.kafka_service import KafkaService
from harness.runner.schedule import Schedule
from harness.runner.shared import RunShared
from harness.runner.spark_service import SparkService
from harness.runner.topology import Topology
from harness.secrets import split_password
from harness.spark.launcher import dump_jvm_threads
from harness.spark.paths import driver_paths
from harness.spark.session import log_level
from harness.waiting import Patience, wait_for
from pipelines.settings import DriverPaths, DriverSettings, SourceOptions

if TYPE_CHECKING:
    from harness.runner.run_parts import ApplicationRun

APP_IDLE_S = 30.0  # an application restarted with nothing to read is taken as up after this long (see wait_up)
STOP_S = 60.0  # a driver asked to stop that has not after this long is killed
NEXT_RUN_S = 30.0  # a scheduled job's next run begins within every_s and this (the schedule looks 4 times a second)


@dataclass
class Ending:
    """How a run's drivers ended: the drain's seconds (None: it did not drain), each streamlet's exit code, and why
    a streamlet was stopped before it had read everything (None: none was)."""

    drain_s: float | None = None
    exit_codes: dict[str, int | None] = field(default_factory=dict)
    behind: str | None = None


def _last_error(log: str) -> str:
    """The last line of a driver's log that names an error (an application's own log is all there is of why it
    ended), as ": LINE", or ""."""
    try:
        lines = Path(log).read_text(errors="replace").splitlines()[-200:]
    except OSError:
        return ""
    found = [line.strip() for line in lines if "Error" in line or "Exception" in line]
    return f": {found[-1][:300]}" if found else ""


class Streamlets:
    """The drivers of a run's streamlets; `run` is what a team's application is started with."""

    def __init__(
        self, shared: RunShared, run: ApplicationRun, topology: Topology, kafka: KafkaService, spark: SparkService
    ):
        self.shared = shared
        self.run = run
        self.topology = topology
        self.kafka = kafka
        self.spark = spark
        self.procs: dict[str, ManagedProcess] = {}
        self.source_overrides: dict[str, SourceOptions] = {}  # set by a redeploy
        self.setting_overrides: dict[str, dict] = {}  # e.g. an executor-crash probability
        self.failed: dict[str, str] = {}  # streamlet -> why its driver ended by itself
        # a restarted driver's first batch: at least 240 s, four times what the first start took on this machine
        self.restart_patience = Patience(floor_s=240.0)
        self.under_fault: set[str] = set()  # targets a fault is playing on: their drivers stop on purpose
        self.stopped: set[str] = set()  # streamlets whose drivers the run stopped at its end
        self.written_at_start: dict[str, int] = {}  # a real-time application: its topics' records as it started
        self.started_at: dict[str, float] = {}  # when each driver last started (monotonic)
        self.runs_ended: set[int] = set()  # the pids of a scheduled job's runs that ended, each recorded once
        self._ending = threading.Lock()  # the schedule's thread and the run's both look for ends
        self.schedule: Schedule | None = None
        self.evidence = True  # False: drivers skip batch stamps and audit (bench/pipeline_throughput.py's overhead)
        self.progress: dict[str, ProgressFollower | CheckpointFollower] = {
            name: CheckpointFollower(self.shared.layout.checkpoints(name), self.shared.layout.spark_local(name))
            if inst.kind == APPLICATION
            else ProgressFollower(self.shared.layout.progress(name))
            for name, inst in shared.scenario.blueprint.streamlets.items()
            if inst.runs
        }

    def settings(self, name: str) -> DriverSettings:
        inst = self.shared.scenario.blueprint.streamlets[name]
        inputs, outputs, source_topic = self.topology.streamlet_topics(name)
        kafka = self.kafka.kafka
        return DriverSettings(
            name=name,
            kind=inst.kind,
            settings={**inst.settings, **self.setting_overrides.get(name, {})},
            bootstrap_servers=self.kafka.client_access(name).bootstrap_servers,
            kafka_security=kafka.security,
            paths=self.paths(name),
            spark_conf={**self.spark.conf(inst.cls), **self.spark.cluster_conf()},
            **({"master": master} if (master := self.spark.master()) else {}),
            app_name=self.spark.app_name(name),
            log_level=log_level(),
            inputs=inputs,
            outputs=outputs,
            source_topic=source_topic,
            source=self.namespaced(self.source_overrides.get(name) or self.source_options(name)),
            group_id_prefix=f"{kafka.namespace}{name}" if kafka.namespace else None,
            store_url=split_password(self.shared.scenario.store_url)[0],
            evidence=self.evidence,
            import_paths=list(self.shared.scenario.import_paths),
            codecs={topic: codec for topic, (codec, _) in self.topology.topic_schemas().items()},
        )

    def namespaced(self, source: SourceOptions) -> SourceOptions:
        """On a cluster one runs, a consumer group the scenario names is the run's own too."""
        namespace = self.kafka.kafka.namespace
        if namespace and source.group_id:
            return replace(source, group_id=f"{namespace}{source.group_id}")
        return source

    def paths(self, name: str) -> DriverPaths:
        return driver_paths(self.shared.layout, name, self.shared.scenario.recordings == COLUMNAR)

    def source_options(self, name: str) -> SourceOptions:
        """How the scenario has the streamlet read the source (before any redeploy changed it)."""
        return self.shared.scenario.options_for(name)

    def committed_offsets(self, name: str) -> dict[tuple[str, int], int]:
        """Where the streamlet resumes: per input partition, the lowest position its queries committed."""
        positions: dict[tuple[str, int], int] = {}
        for checkpoint in sorted(self.shared.layout.checkpoints(name).glob("*")):
            for tp, offset in committed_positions(checkpoint).items():
                positions[tp] = min(offset, positions.get(tp, offset))
        return positions

    def has_crash_point(self, name: str) -> bool:
        """Whether the streamlet's driver holds a batch at its crash point when armed: one whose queries write
        through the context's foreachBatch says so as it starts them (pipelines/crashpoint.py); one writing only
        with Spark's own sinks, and a team's application, run unchanged, do not."""
        return self.shared.layout.crash_offered(name).exists()

    def real_time(self, name: str) -> bool:
        """Whether the streamlet is an application whose query runs in Real-time Mode (its `trigger`)."""
        inst = self.shared.scenario.blueprint.streamlets[name]
        return inst.kind == APPLICATION and inst.settings.get("trigger") == REAL_TIME

    def _written(self, name: str) -> int:
        """Records on the topics the streamlet writes, now (their log-end offsets, summed)."""
        mine = set(self.topology.output_topics(name))
        return sum(end for (topic, _), end in self.kafka.log_ends().items() if topic in mine)

    def every_s(self, name: str) -> float | None:
        """How often a job that ends after each run is started again (runner/schedule.py); None: it runs on."""
        schedule = self.shared.scenario.blueprint.streamlets[name].settings.get("schedule")
        return schedule["every_s"] if schedule else None

    def between_runs(self, name: str) -> bool:
        """Whether a scheduled job's last run has ended as a run does (its driver exited with code 0)."""
        proc = self.procs.get(name)
        return self.every_s(name) is not None and proc is not None and not proc.running() and proc.returncode == 0

    def next_run(self, name: str) -> ManagedProcess | None:
        """A scheduled job's driver running now, or its next run's once begun (after at most every_s and a start's
        patience); None for a job that runs on, or one the run has stopped."""
        every_s = self.every_s(name)
        if every_s is None:
            return None

        def begun() -> bool:
            return self.procs[name].running() or name in self.failed or name in self.stopped

        wait_for(begun, timeout=every_s + NEXT_RUN_S, interval=0.1, what=f"the next run of {name}")
        proc = self.procs[name]
        return proc if proc.running() else None

    def up(self, name: str, first: bool = False) -> bool:
        """Whether the streamlet's driver is up: it has committed a batch since it started. A Real-time Mode query
        commits only as each checkpoint interval ends (every five minutes by default): it is up once its topics
        grew since its driver started (its first output) or, on its `first` start, when there may be nothing to
        read yet, once its query resolved where its sources start (its offsets, in its checkpoint)."""
        follower, proc = self.progress[name].poll(), self.procs[name]
        if follower.reporting(proc.pid) or self.between_runs(name):
            return True
        if not self.real_time(name):
            return False
        if first and follower.sources_started(proc.pid):
            return True
        return self._written(name) > self.written_at_start[name]

    def start(self, name: str) -> ManagedProcess:
        if self.real_time(name):
            self.written_at_start[name] = self._written(name)
        if self.shared.scenario.blueprint.streamlets[name].kind == APPLICATION:
            proc = start_application(self.run, name)
        else:
            self.settings(name).save(self.shared.layout.driver_settings(name))
            proc = self.spark.launch(f"streamlet-{name}", "pipelines.driver", name)
        self.procs[name] = proc
        self.started_at[name] = time.monotonic()
        self.failed.pop(name, None)
        self.shared.history.record(
            PROCESS_STARTED, process=f"streamlet-{name}", pid=proc.pid, role="driver", streamlet=name
        )
        return proc

    def start_all(self, timeout: float = 240.0) -> None:
        """Start every streamlet and wait until each has run its first batch: the pipeline is warm. How long that
        took is what a restart is given, scaled (self.restart_patience)."""
        t0 = time.monotonic()
        for name in self.shared.scenario.blueprint.order():
            if name in self.progress:  # an output is not run
                self.start(name)

        def all_reporting() -> bool:
            return all(self.up(n, first=True) for n in self.procs)

        misplaced: list[str] = []

        def stop_early() -> str | None:
            dead = self.dead()
            if dead:
                return dead
            misplaced[:] = [m for m in [misplaced_checkpoint(self.run)] if m]
            return misplaced[0] if misplaced else None

        try:
            wait_for(
                all_reporting, timeout=timeout, interval=0.25, what="every streamlet's first batch", abort=stop_early
            )
        except WaitTimeout as exc:
            if misplaced:  # the job runs, its checkpoint elsewhere: a misconfiguration, said as bad input
                raise HarnessError(misplaced[0]) from None
            self._silent_application(exc)
            raise
        self.restart_patience.measure(time.monotonic() - t0)
        scheduled = {n: every_s for n in self.procs if (every_s := self.every_s(n)) is not None}
        if scheduled:
            self.schedule = Schedule(self, scheduled).start()
        self.shared.say(
            f"{len(self.procs)} streamlet drivers running ({', '.join(self.procs)}) after {time.monotonic() - t0:.1f}s"
        )

    def _silent_application(self, exc: WaitTimeout) -> None:
        """An application that runs but committed no batch where the harness follows it: said as bad input."""
        silent = [n for n, p in self.procs.items() if p.running() and not self.up(n, first=True)]
        apps = [n for n in silent if self.shared.scenario.blueprint.streamlets[n].kind == APPLICATION]
        if apps:
            raise HarnessError(
                f"applications.{apps[0]}: no batch committed in its checkpoint folder "
                f"({self.shared.layout.checkpoints(apps[0]) / MAIN_QUERY}) while it runs ({exc}): does the job use the "
                "${checkpoint} it is given as its checkpointLocation?"
            ) from None

    def wait_up(self, name: str, timeout: float | None = None) -> bool:
        """Wait until a (re)started driver is up (self.up: its first batch); False if it ended instead. An application
        restarted with nothing left to read commits no batch (Spark plans none): it counts as up once it has run for
        APP_IDLE_S with its inputs all committed (its recovery time is then unknown: no batch shows it). Without a
        `timeout`, the run's restart patience: scaled by how long the drivers took to start."""
        timeout = self.restart_patience.timeout_s if timeout is None else timeout
        proc = self.procs[name]
        started = time.monotonic()
        application = self.shared.scenario.blueprint.streamlets[name].kind == APPLICATION

        def idle() -> bool:
            if not application or time.monotonic() - started < APP_IDLE_S or not proc.running():
                return False
            return self.lags(self.kafka.log_ends()).get(name) == 0

        try:
            wait_for(
                lambda: self.up(name) or not proc.running() or idle(),
                timeout=timeout,
                interval=0.5,
                what=f"streamlet {name} (pid {proc.pid}) to run its first batch",
            )
        except WaitTimeout as exc:
            stacks = self.shared.layout.log(f"streamlet-{name}.stacks")
            if dump_jvm_threads(proc, stacks):
                raise WaitTimeout(f"{exc} (its JVM's threads: {stacks})") from None
            raise
        return proc.running() or self.between_runs(name)

    def close(self) -> None:
        """Start no more runs of a scheduled job."""
        if self.schedule is not None:
            self.schedule.stop()

    def exited(self) -> list[str]:
        """Streamlets whose driver ended by itself since the last look; each exit is recorded once, with its error."""
        exited = []
        for name, proc in list(self.procs.items()):
            if name in self.failed or name in self.under_fault or name in self.stopped or proc.running():
                continue
            if self.between_runs(name):  # a run that ended, as runs of a scheduled job do
                with self._ending:
                    first = proc.pid not in self.runs_ended
                    self.runs_ended.add(proc.pid)
                if first:
                    self.shared.history.record(PROCESS_EXITED, process=f"streamlet-{name}", pid=proc.pid, exit_code=0)
                continue
            failures = self.progress[name].poll().failures
            reason = failures[-1] if failures else f"exit code {proc.returncode}{_last_error(proc.record.log_path)}"
            self.failed[name] = reason
            self.shared.history.record(
                PROCESS_EXITED, process=f"streamlet-{name}", pid=proc.pid, exit_code=proc.returncode
            )
            if failures or proc.returncode:  # a query that failed, or a driver that failed before it ran one
                self.shared.history.record(QUERY_FAILED, streamlet=name, pid=proc.pid, error=reason)
            exited.append(name)
        return exited

    def dead(self) -> str | None:
        """For waits that cannot go on without every driver: why one is gone, or None."""
        for name in self.exited():
            why = self.failed[name].splitlines()[0]
            return f"streamlet {name} exited: {why} (see {self.procs[name].record.log_path})"
        return None

    def lags(self, log_ends: dict[tuple[str, int], int]) -> dict[str, int | None]:
        """Per running streamlet: records of its inputs not processed yet (None: no query started)."""
        lags = {}
        for name in self.shared.scenario.blueprint.order():
            if name in self.failed or name not in self.progress:
                continue
            mine = set(self.topology.input_topics(name))
            lags[name] = self.progress[name].poll().lag({tp: end for tp, end in log_ends.items() if tp[0] in mine})
        return lags

    def drain_and_stop(self, behind: str | None = None, drain_s: float = 300.0, step_s: float = 120.0) -> Ending:
        """Drain the pipeline and stop its drivers, in the data's order: first those that read no other streamlet's
        output, then each once the streamlets writing its inputs have stopped writing and it has read what they
        wrote. A stateless streamlet writes only what it reads: its drivers stop the moment they have read
        everything, while the hops after them still drain. A stateful one can still write after that (a batch
        without input, run because its watermark moved on, emits the windows it closed), and so can a streamlet
        whose state is not known yet: its drivers stop once the whole pipeline from it on has drained. The drivers
        of one step are asked to stop at once (SIGTERM to each); the next step goes on once their queries have
        ended, while their JVMs shut down. Waits are deadlines: `drain_s` for the whole drain (it takes seconds,
        but minutes where executors lost to faults come back on a busy machine), then `step_s` for each step after
        one fell behind, or after `behind` (why the pipeline cannot drain, e.g. the generator did not end)."""
        t0 = time.monotonic()
        ending = Ending(behind=behind)
        remaining = list(self.procs)
        with ThreadPoolExecutor(max_workers=len(remaining) or 1, thread_name_prefix="stop") as pool:
            exits = {}
            while remaining:
                step = [n for n in remaining if not any(self.topology.feeds(m, n) for m in remaining if m != n)]
                step = step or remaining
                stateless = all(self.progress[n].poll().stateless() for n in step if n not in self.failed)
                waited = step if stateless else remaining
                try:
                    wait_for(
                        lambda: self._caught_up(waited),
                        timeout=step_s if ending.behind else max(0.0, t0 + drain_s - time.monotonic()),
                        interval=0.25,  # each look asks the brokers for the log ends
                        what=f"{', '.join(waited)} to read what was written to them",
                    )
                except WaitTimeout as exc:
                    ending.behind = ending.behind or str(exc)
                remaining = [n for n in remaining if n not in step]
                if not remaining and ending.behind is None:
                    ending.drain_s = time.monotonic() - t0
                    self.shared.history.record(DRAINED, failed=sorted(self.failed))
                exits.update(self._stop_writing(step, pool))
            ending.exit_codes = {name: exit.result() for name, exit in exits.items()}
        return ending

    def _stop_writing(self, step: list[str], pool: ThreadPoolExecutor) -> dict:
        """Ask the drivers of `step` to stop and wait until they write nothing more: their queries ended, or their
        processes (a team's application says nothing of its queries). Returns each one's exit, waited for by
        `pool`: a driver that has not ended after STOP_S is killed before the next step goes on."""
        live = [n for n in step if n not in self.failed]
        for name in live:
            self.stopped.add(name)
            self.procs[name].ask_to_stop()

        def ended(name: str) -> bool:
            proc = self.procs[name]
            return not proc.running() or self.progress[name].poll().queries_ended(proc.pid)

        try:
            wait_for(lambda: all(ended(n) for n in live), timeout=STOP_S, interval=0.05, what="queries to end")
        except WaitTimeout:  # it may still write: killed before the next step goes on
            for name in (n for n in live if not ended(n)):
                self.procs[name].kill()
        return {name: pool.submit(self._stop, name) for name in step}

    def _stop(self, name: str) -> int | None:
        """Wait for the driver of `name`, asked to stop by `_stop_writing`, to exit (SIGKILL after STOP_S) and record
        its exit; a failed one's is kept."""
        proc = self.procs[name]
        if name in self.failed or self.between_runs(name):
            self.exited()  # a scheduled job's last run, ended as runs do: recorded as such
            return proc.returncode
        code = proc.stop(timeout=STOP_S, asked=True)
        self.shared.history.record(
            PROCESS_STOPPED, process=f"streamlet-{name}", pid=proc.pid, signal="SIGTERM", exit_code=code
        )
        return code

    def _caught_up(self, names: list[str]) -> bool:
        """Whether these streamlets (those running) have read their inputs up to their log-end offsets now."""
        self.exited()
        ends = self.kafka.log_ends()  # read after the exits: a streamlet that failed is not waited for
        return all(lag == 0 for name, lag in self.lags(ends).items() if name in names)

    def export_states(self, timeout: float = 300.0) -> None:
        """After the drivers stopped: each egress of your own exports its final state (pipelines/export.py), in a
        process of its own, so the checker can read it from a file. A failed export is recorded; the checker then
        finds no state and says what it cannot judge."""
        for name, inst in self.shared.scenario.blueprint.streamlets.items():
            if inst.cls.egress_evidence != EXPORTED:
                continue
            self.settings(name).save(self.shared.layout.driver_settings(name))
            proc = self.spark.launch(f"export-{name}", "pipelines.export", name)
            code = proc.wait_exit(timeout)
            if code is None:
                proc.kill()
            self.shared.history.record(
                STATE_EXPORTED,
                streamlet=name,
                exit_code=code,
                path=str(self.shared.layout.egress_state(name).relative_to(self.shared.layout.root)),
            )
            if code != 0:
                log = self.shared.layout.log(f"export-{name}")
                self.shared.say(f"exporting {name}'s state failed (exit code {code}): see {log}")
