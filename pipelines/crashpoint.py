"""A crash point the harness can arm: after a batch's write, before Spark commits the batch.

A SIGKILL at a random moment mostly lands between micro-batches (a batch of
tens of milliseconds, a trigger every second) and replays nothing. To show
what a sink does with a replay, the harness arms the point by creating
control/<streamlet>.arm; the next batch of that driver to finish its write
takes the arm (one taker, by unlink), writes control/<streamlet>.held with
its query and batch id, and waits there to be killed. Spark has written
offsets/N but not commits/N: the restarted driver replays batch N.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

HOLD_LIMIT_S = 300.0  # the harness kills within seconds; this only bounds a driver whose harness died


class CrashPoint:
    def __init__(self, arm: Path, held: Path, offered: Path):
        self.arm = Path(arm)
        self.held = Path(held)
        self.offered = Path(offered)

    def offer(self) -> None:
        """Say that a query of this driver passes the point (before it starts): an armed point will be taken. A
        driver that never offers one (Spark's own sinks only) is killed after-write at the moment its output shows
        instead (harness/faults/kinds/kill_driver.py)."""
        self.offered.parent.mkdir(parents=True, exist_ok=True)
        self.offered.touch()

    def reached(self, query: str, batch_id: int) -> None:
        """Called after every batch's write: hold here if the point is armed, else return at once."""
        try:
            os.unlink(self.arm)
        except FileNotFoundError:
            return
        partial = self.held.with_name(self.held.name + ".tmp")  # the harness never reads half of it
        partial.write_text(json.dumps({"query": query, "batch": batch_id, "pid": os.getpid()}))
        os.replace(partial, self.held)
        deadline = time.monotonic() + HOLD_LIMIT_S
        while time.monotonic() < deadline:
            time.sleep(0.2)
