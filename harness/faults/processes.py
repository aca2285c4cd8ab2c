"""What the faults that kill a server process share (a broker, a Spark worker): SIGKILL it, leave it down for
a while, start it again, each step in the history."""

from __future__ import annotations

import time
from typing import Callable

from harness.faults.kind import FaultKind
from harness.faults.target import Pipeline


def kill_then_start(run: Pipeline, kind: FaultKind, target: str, process: str, pid: int | None, role: str,
                    kill: Callable[[], None], start: Callable[[], int | None], down_s: float, **fields) -> None:
    """`kill()` SIGKILLs it, `start()` starts it again and returns its new pid once it serves again."""
    kind.begun(run, target, pid=pid, **fields)
    kill()
    run.history.record("process_killed", process=process, pid=pid, signal="SIGKILL")
    time.sleep(down_s)
    new_pid = start()
    run.history.record("process_started", process=process, pid=new_pid, role=role)
    kind.ended(run, target, new_pid=new_pid)
