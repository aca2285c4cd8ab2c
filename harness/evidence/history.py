"""The history: one JSON line per thing that happened during a run, flushed at once."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

MIB = 1024 * 1024  # the unit of the `resources` samples' rss_mb and disk_mb
BUDGET = "evidence_budget"  # the run's evidence budget, as the workload starts
BUDGET_REACHED = "evidence_budget_reached"  # the workload ended early at the run's evidence budget
FAULT_PLANNED = "fault_planned"  # a fault the run means to play: its number, kind, target, planned_s and window_s
MOMENT_MISSED = "crash_point_missed"  # a fault's moment (a batch written, or in flight) did not come in time
WORLD_PREPARED = "world_prepared"  # an application's world: its relays, its binds, its folder, its rendered files
REQUIREMENTS_INSTALLED = "requirements_installed"  # an application's own requirements: where, what, how long
SETUP_RAN = "setup_ran"  # an application's setup step ran in its world: its command, exit code and time
TOPIC_RECREATED = "topic_recreated"  # topics deleted and created again under a streamlet, what it had read of them


class History:
    """Append-only event log (thread-safe); a crash of the harness leaves every line written so far."""

    def __init__(self, path: Path):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._file = open(path, "a")
        self._lock = threading.Lock()

    def record(self, event: str, **fields) -> None:
        line = json.dumps({"ts_ms": int(time.time() * 1000), "event": event, **fields}, default=str)
        with self._lock:
            self._file.write(line + "\n")
            self._file.flush()

    def close(self) -> None:
        with self._lock:
            self._file.close()
