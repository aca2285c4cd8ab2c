"""What the faults that kill a server process share (a broker, a Spark worker): SIGKILL it, leave it down for
a while, start it again, each step in the history."""

from __future__ import annotations

import time
from typing import Callable

from harness.evidence.history import PROCESS_KILLED, PROCESS_STARTED, PROCESS_STOPPED
from harness.faults.kind import FaultKind, TargetGone
from harness.faults.target import Pipeline


def kill_then_start(
    run: Pipeline,
    kind: FaultKind,
    target: str,
    process: str,
    pid: int | None,
    role: str,
    kill: Callable[[], None],
    start: Callable[[], int | None],
    running: Callable[[], bool],
    down_s: float,
    graceful: bool = False,
    **fields,
) -> None:
    """`kill()` SIGKILLs it (with `graceful`: stops it with SIGTERM), `start()` starts it again and returns its new
    pid once it serves again. Starting it again is the fault's undo: it happens whatever happened before (retried
    at the drain when it fails)."""
    if not running():
        raise TargetGone(f"{process} is not running")
    kind.begun(run, target, pid=pid, **fields)
    with run.undos.undoing(
        kind.name, target, f"start {process} again", lambda: _started(run, kind, target, process, role, start, running)
    ):
        kill()
        run.history.record(
            PROCESS_STOPPED if graceful else PROCESS_KILLED,
            process=process,
            pid=pid,
            signal="SIGTERM" if graceful else "SIGKILL",
        )
        time.sleep(down_s)


def _started(
    run: Pipeline,
    kind: FaultKind,
    target: str,
    process: str,
    role: str,
    start: Callable[[], int | None],
    running: Callable[[], bool],
) -> None:
    """Start it (`start` is idempotent: it waits for one started by an earlier try), then end the fault."""
    was_down = not running()
    new_pid = start()
    if was_down:
        run.history.record(PROCESS_STARTED, process=process, pid=new_pid, role=role)
    kind.ended(run, target, new_pid=new_pid)


def start_broker(node, timeout: float = 120.0) -> int | None:
    """Start a broker that is down and wait until the cluster lists it; one already up is only waited for."""
    if not node.running():
        node.start(wait=False)
    node.wait_ready(timeout)
    return node.pid
