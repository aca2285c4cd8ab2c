"""A long run judged as it runs: every so often its periods so far, a line each in judged.jsonl and on the console.

The check runs in a child process (`harness check RUN_DIR --json`, niced), so that the harness's own memory, which
a soak judges, does not carry it, and the pipeline under test keeps the cores first. A run still going is judged as
`harness check` judges it: its periods whose every record has arrived (or is proven lost) get a provisional verdict,
the later ones are unknown. The child is stopped (its process group) when the run ends, before the final check, so
that it is never taken for one of the run's processes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable

from harness.checker.periods import SOAK_PERIOD_S, period_length_s
from harness.evidence.layout import RunLayout
from harness.runner.periodic import PeriodicSampler

NICENESS = 10
SETTLE = 0.2  # of an interval: how long after a period's end it is judged
STOP_GRACE_S = 5.0  # a check stopping at SIGTERM removes its copies; one stuck in a long call is killed after this


def judge_every_s(planned_s: float, asked_s: float | None) -> float | None:
    """How often to judge a run planned to send for `planned_s`: `asked_s` (0: never), else the length of its
    periods when they are a minute or longer (a run of 12 minutes or more); None: not as it runs."""
    if asked_s is not None:
        return asked_s or None
    length_s = period_length_s(int(planned_s * 1000))
    return float(length_s) if length_s >= SOAK_PERIOD_S else None


def _state(period: dict) -> str:
    """A period's verdict, or why it has none yet: records not delivered yet, or not run (the evidence budget)."""
    counts = period.get("counts") or {}
    if period.get("verdict") != "unknown":
        return period.get("verdict")
    if counts.get("undelivered"):
        return "awaiting delivery"
    return "not run" if counts.get("acked") == 0 and counts.get("lost") is None else "unknown"


class LiveJudge(PeriodicSampler):
    """Judges the run in `run_dir` every `interval_s`, the first after (1 + SETTLE) intervals, while the run goes."""

    def __init__(self, run_dir: Path, interval_s: float, say: Callable[[str], None]):
        super().__init__("live-judge", interval_s)
        self.layout, self.say = RunLayout(Path(run_dir)), say
        self.t0 = time.monotonic()
        self._child: subprocess.Popen | None = None
        self._stopping = False
        self._lock = threading.Lock()

    def sample(self) -> None:
        if time.monotonic() - self.t0 < 0.5 * self.interval_s:  # the first call, as the run starts
            # judged SETTLE of an interval after each period ends: its last records are in flight as it ends
            self._stop.wait(SETTLE * self.interval_s)
            return
        if not self.layout.written_ack_log.exists():
            return  # the workload has not begun
        with self._lock:
            if self._stopping:
                return
            self._child = subprocess.Popen(
                [sys.executable, "-m", "harness.cli", "check", str(self.layout.root), "--json"],
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # its own process group, stopped whole
            )
            try:  # set from here: a preexec_fn is not safe in a process with threads
                os.setpriority(os.PRIO_PROCESS, self._child.pid, NICENESS)
            except OSError:  # already gone
                pass
        out, _ = self._child.communicate()
        try:
            report = json.loads(out)
        except ValueError:  # stopped, or the run directory could not be judged yet (exit 2): no judgment
            return
        self._record(report)

    def _record(self, report: dict) -> None:
        periods = report.get("periods") or {}
        elapsed_s = round(time.monotonic() - self.t0, 1)
        line = {
            "ts_ms": int(time.time() * 1000),
            "elapsed_s": elapsed_s,
            "status": report.get("status"),
            "counts": report.get("counts"),
            "periods": periods,
        }
        with open(self.layout.judged, "a") as out:
            out.write(json.dumps(line) + "\n")
        states = [_state(p) for p in periods.get("periods", [])]
        tally = ", ".join(f"{states.count(v)} {v}" for v in dict.fromkeys(states)) or "no period yet"
        acked = (report.get("counts") or {}).get("acked") or 0
        self.say(
            f"judged at {elapsed_s:.0f}s ({acked:,} records so far): periods of {periods.get('length_s')} s: {tally}"
            if periods
            else f"judged at {elapsed_s:.0f}s: no periods ({report.get('verdict', {}).get('end_to_end')})"
        )

    def stop(self) -> None:
        """Stop judging; a judgment under way is stopped with its process group."""
        with self._lock:
            self._stopping = True
            child = self._child
        if child is not None and child.poll() is None:
            _stop_group(child)
        super().stop()


def _stop_group(child: subprocess.Popen) -> None:
    """SIGTERM to the check's process group (it removes its temporary copies as it stops: checker/scratch.py), then
    SIGKILL if it has not ended within STOP_GRACE_S."""
    for signum, grace_s in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, None)):
        try:
            os.killpg(child.pid, signum)
        except ProcessLookupError:
            pass
        try:
            child.wait(grace_s)
            return
        except subprocess.TimeoutExpired:
            continue
