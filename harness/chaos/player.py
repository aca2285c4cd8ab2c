"""The chaos driver: plays a fault schedule against a running pipeline while the workload runs.

One loop, on the harness's main thread: fire each planned fault when its time
comes, notice drivers that ended by themselves, and tick the caller's progress
display. A fault runs in a thread of its own (its action blocks until the
pipeline is whole again), so faults on different targets overlap and the
schedule does not drift behind slow restarts; a fault whose target is still
under an earlier fault waits for it. A fault that fails does not end the run:
it is recorded (fault_skipped when it had no effect, its target gone;
fault_failed when it may have had one, with its traceback in logs/faults.log)
and the run goes on, to be drained and judged. It returns once every fault was
played and the generator is done; a workload with no end of its own
(OpenWorkload) is stopped here, some time after the last fault ended.
"""

from __future__ import annotations

import threading
import time
import traceback
from dataclasses import dataclass
from typing import Callable

from harness.chaos.schedule import Firing
from harness.errors import HarnessError
from harness.evidence.history import FAULT_FAILED, FAULT_PLANNED, FAULT_SKIPPED
from harness.faults import FaultKind
from harness.faults.kind import FiringContext, TargetGone, has_begun, play_begins
from harness.faults.target import Pipeline
from harness.faults.undo import UndoFailed


def describe(firing: Firing) -> str:
    params = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in firing.params.items())
    return f"{firing.kind} {firing.target}" + (f" ({params})" if params else "")


@dataclass(frozen=True)
class OpenWorkload:
    """A workload that lasts until `after_faults_s` after the last fault ended, and at least `min_s`: faults
    that come late on a busy machine still have records flowing around them. `stop` ends it (called until
    the generator is done)."""

    min_s: float
    after_faults_s: float
    stop: Callable[[], None]


class _Playing:
    """The faults in flight: one thread each, their targets, and the first error that must end the run."""

    def __init__(self, run: Pipeline, kinds: dict[str, FaultKind], say: Callable[[str], None], t0: float):
        self.run, self.kinds, self.say, self.t0 = run, kinds, say, t0
        self.threads: dict[str, threading.Thread] = {}  # target -> the thread playing a fault on it
        self.groups: dict[str, str | None] = {}  # target -> the group of the fault playing on it
        self.error: BaseException | None = None  # an interrupt, handed to the main thread
        self.finished = 0
        self.quiet_since = time.monotonic()  # when the last fault ended (or the start)
        self.moved_at = time.monotonic()  # when a fault last started or ended
        self._lock = threading.Lock()

    def busy(self, target: str) -> bool:
        thread = self.threads.get(target)
        return thread is not None and thread.is_alive()

    def room(self, firing: Firing, limits: dict[str, int]) -> bool:
        """Whether its group (if it has a limit) has fewer faults in flight than the limit allows."""
        if firing.group not in limits:
            return True
        return sum(self.busy(t) for t, g in self.groups.items() if g == firing.group) < limits[firing.group]

    def fire(self, firing: Firing) -> None:
        self.run.under_fault.add(firing.target)
        self.moved_at = time.monotonic()

        def play_one() -> None:
            play_begins(FiringContext(firing.number, firing.at_s, self.t0))
            try:
                self.kinds[firing.kind].play(self.run, firing.target, **firing.params)
                with self._lock:
                    self.finished += 1
            except Exception as exc:  # recorded; the run goes on
                self._failed(firing, exc)
            except BaseException as exc:  # an interrupt: handed to the main thread, which ends the run with it
                with self._lock:
                    self.error = self.error or exc
            finally:
                self.run.under_fault.discard(firing.target)
                self.quiet_since = self.moved_at = time.monotonic()

        thread = threading.Thread(target=play_one, name=f"fault-{firing.kind}-{firing.target}", daemon=True)
        self.threads[firing.target], self.groups[firing.target] = thread, firing.group
        thread.start()

    def _failed(self, firing: Firing, exc: Exception) -> None:
        """Skipped when it had no effect (its target gone, or it failed before it began); failed otherwise, its
        undo pending when that is what failed (the drain tries it again)."""
        reason = (str(exc) if isinstance(exc, HarnessError) else f"{type(exc).__name__}: {exc}").splitlines()[0][:500]
        self.run.layout.log_dir.mkdir(parents=True, exist_ok=True)
        with open(self.run.layout.log("faults"), "a") as log:
            log.write(f"fault {firing.number} {describe(firing)}\n{''.join(traceback.format_exception(exc))}\n")
        if isinstance(exc, TargetGone) or not has_begun():
            _skipped(self.run, firing, reason)
            self.say(f"fault {firing.number} skipped: {describe(firing)}: {reason}")
            return
        undo = isinstance(exc, UndoFailed)
        self.run.history.record(
            FAULT_FAILED,
            kind=firing.kind,
            target=firing.target,
            fault=firing.number,
            reason=reason,
            stage="undo" if undo else "effect",
        )
        self.say(
            f"fault {firing.number} failed: {describe(firing)}: {reason}"
            + (
                "; its undo is tried again at the drain"
                if undo
                else "; what it did is partly known: the outcome will be unknown"
            )
        )

    def any_running(self) -> bool:
        return any(t.is_alive() for t in self.threads.values())

    def check(self) -> None:
        if self.error is not None:
            raise self.error


def _skipped(run: Pipeline, firing: Firing, why: str) -> None:
    run.history.record(
        FAULT_SKIPPED,
        kind=firing.kind,
        target=firing.target,
        fault=firing.number,
        planned_s=firing.at_s,
        reason=why,
    )


def _skip_all(run: Pipeline, pending: list[Firing], why: str, say: Callable[[str], None]) -> None:
    """The faults not yet played, skipped for `why` (each recorded; `pending` emptied)."""
    for firing in pending:
        _skipped(run, firing, why)
    say(f"{len(pending)} fault(s) not played: {why}")
    pending.clear()


def record_planned(
    run: Pipeline, number: int, kind: str, target: str, planned_s: float | None = None, window_s: float | None = None
) -> None:
    """fault_planned in the history: a fault the run means to play (planned_s None: for the whole run), so the
    checker can tell each fault that struck as declared from one that did not."""
    run.history.record(FAULT_PLANNED, fault=number, kind=kind, target=target, planned_s=planned_s, window_s=window_s)


def play(
    run: Pipeline,
    firings: list[Firing],
    kinds: dict[str, FaultKind],
    overrun_s: float,
    say: Callable[[str], None],
    *,
    on_tick: Callable[[float, int], None] = lambda elapsed, played: None,
    open_workload: OpenWorkload | None = None,
    group_limits: dict[str, int] | None = None,
    cut: Callable[[], str | None] = lambda: None,
    total: int | None = None,
) -> int:
    """Play `firings` (times relative to now) with the kinds they name; returns how many were played.

    `overrun_s` bounds the whole: the generator must be done and every fault
    played within it, counted from the last firing time (or the workload's end) or
    from the last fault that started or ended after that, whichever is later: a
    fault that waits long for its moment on a busy machine is progress, a hang is not.
    `group_limits`: at most so many faults of a group in flight at once (a later
    one waits, as one whose target is busy does). `cut`: why the workload ended
    early (None: it has not); the faults not yet played are then skipped.
    `total`: how many faults the run has, the whole-run ones too (None: these).
    Each firing is recorded as planned first (fault_planned), by its number.
    """
    limits = group_limits or {}
    t0 = time.monotonic()
    for firing in firings:
        record_planned(run, firing.number, kinds[firing.kind].name, firing.target, firing.at_s, firing.window_s)
    pending = list(firings)
    playing = _Playing(run, kinds, say, t0)
    planned_s = max([f.at_s for f in firings] + [0.0])
    total = len(firings) if total is None else total
    while True:
        playing.check()
        elapsed = time.monotonic() - t0
        why_cut = cut() if pending else None
        if why_cut:
            _skip_all(run, pending, why_cut, say)
        for name in run.exited_drivers():
            say(f"streamlet {name} stopped by itself: {run.failed[name].splitlines()[0][:200]}")
        due = [f for f in pending if f.at_s <= elapsed and not playing.busy(f.target)]
        for firing in due:
            if playing.busy(firing.target) or not playing.room(firing, limits):
                continue  # an earlier one of this tick took its target, or its group is full: it waits
            pending.remove(firing)
            if firing.target in run.failed:
                _skipped(run, firing, "target is not running")
                say(f"fault {firing.number} skipped: {describe(firing)}: the streamlet is not running")
                continue
            late = elapsed - firing.at_s
            say(
                f"fault {firing.number}/{total} at {elapsed:.0f}s: {describe(firing)}"
                + (
                    f" ({late:.0f}s late: waited for the fault before it on {firing.target}"
                    + (f" or for room among the {firing.group}" if firing.group else "")
                    + ")"
                    if late >= 2
                    else ""
                )
            )
            playing.fire(firing)
        quiet = not pending and not playing.any_running()
        if (
            quiet
            and open_workload is not None
            and elapsed >= open_workload.min_s
            and time.monotonic() - playing.quiet_since >= open_workload.after_faults_s
        ):
            open_workload.stop()
        if quiet and run.generator_done():
            playing.check()
            return playing.finished
        if elapsed > overrun_s + max(0.0, playing.moved_at - t0 - planned_s):
            raise HarnessError(
                f"the workload did not finish within {elapsed:.0f}s (no fault started or ended in the "
                f"last {time.monotonic() - playing.moved_at:.0f}s)"
            )
        on_tick(elapsed, playing.finished)
        time.sleep(0.2 if due else 0.5)
