"""What the faults that kill a server process share (a broker, a Spark worker): SIGKILL it, leave it down for
a while, start it again, each step in the history."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from harness.evidence.history import PROCESS_KILLED, PROCESS_STARTED, PROCESS_STOPPED
from harness.faults.kind import FaultKind, TargetGone
from harness.faults.target import Pipeline


@dataclass(frozen=True)
class Restartable:
    """A process a fault stops and starts again: `kill()` SIGKILLs it (or stops it, for a graceful fault),
    `start()` starts it again and returns its new pid once it serves again (idempotent: it waits for one started
    by an earlier try), `running()` says whether it runs."""

    process: str  # its name in the history
    pid: int | None
    role: str
    kill: Callable[[], None]
    start: Callable[[], int | None]
    running: Callable[[], bool]


def kill_then_start(
    run: Pipeline, kind: FaultKind, target: str, victim: Restartable, down_s: float, graceful: bool = False, **fields
) -> None:
    """Kill `victim` (with `graceful`: stop it with SIGTERM) and start it again after `down_s`. Starting it again is
    the fault's undo: it happens whatever happened before (retried at the drain when it fails)."""
    if not victim.running():
        raise TargetGone(f"{victim.process} is not running")
    kind.begun(run, target, pid=victim.pid, **fields)
    with run.undos.undoing(
        kind.name, target, f"start {victim.process} again", lambda: _started(run, kind, target, victim)
    ):
        victim.kill()
        run.history.record(
            PROCESS_STOPPED if graceful else PROCESS_KILLED,
            process=victim.process,
            pid=victim.pid,
            signal="SIGTERM" if graceful else "SIGKILL",
        )
        time.sleep(down_s)


def _started(run: Pipeline, kind: FaultKind, target: str, victim: Restartable) -> None:
    """Start it, then end the fault."""
    was_down = not victim.running()
    new_pid = victim.start()
    if was_down:
        run.history.record(PROCESS_STARTED, process=victim.process, pid=new_pid, role=victim.role)
    kind.ended(run, target, new_pid=new_pid)


def start_broker(node, timeout: float = 120.0) -> int | None:
    """Start a broker that is down and wait until the cluster lists it; one already up is only waited for."""
    if not node.running():
        node.start(wait=False)
    node.wait_ready(timeout)
    return node.pid
