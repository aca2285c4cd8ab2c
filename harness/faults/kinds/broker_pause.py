"""broker-pause: freeze a broker (SIGSTOP, or docker pause for a container: its sockets stay open, nothing
answers), thaw it after `paused_s`."""

from __future__ import annotations

import time

from harness.evidence.history import PROCESS_PAUSED, PROCESS_RESUMED
from harness.faults.kind import FaultKind, Param, TargetGone
from harness.faults.target import Pipeline


def pause_broker(run: Pipeline, target: str, paused_s: float) -> None:
    node = run.broker(target)
    if not node.running():
        raise TargetGone(f"{node.name} is not running")
    KIND.begun(run, target, pid=node.pid)
    with run.undos.undoing(KIND.name, target, f"resume {node.name}", lambda: _resumed(run, node)):
        node.pause()
        run.history.record(PROCESS_PAUSED, process=node.name, pid=node.pid, signal=node.paused_by)
        time.sleep(paused_s)


def _resumed(run: Pipeline, node) -> None:
    node.resume()
    run.history.record(PROCESS_RESUMED, process=node.name, pid=node.pid)
    KIND.ended(run, node.name)


KIND = FaultKind(
    name="broker-pause",
    target="broker",
    play=pause_broker,
    scope="cluster",
    needs=("brokers",),
    draw=lambda rng: {"paused_s": round(rng.uniform(3.0, 10.0), 1)},
    params={"paused_s": Param((int, float), 10.0, minimum=0)},
    help="freeze a broker (SIGSTOP; docker pause for a container), thaw it after paused_s",
)
