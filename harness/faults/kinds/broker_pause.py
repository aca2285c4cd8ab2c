"""broker-pause: freeze a broker (SIGSTOP, or docker pause for a container: its sockets stay open, nothing
answers), thaw it after `paused_s`."""

from __future__ import annotations

import time

from harness.faults.kind import FaultKind, Param
from harness.faults.target import Pipeline


def pause_broker(run: Pipeline, target: str, paused_s: float = 10.0) -> None:
    node = run.broker(target)
    KIND.begun(run, target, pid=node.pid)
    node.pause()
    run.history.record("process_paused", process=node.name, pid=node.pid, signal=node.paused_by)
    try:
        time.sleep(paused_s)
    finally:
        node.resume()
    run.history.record("process_resumed", process=node.name, pid=node.pid)
    KIND.ended(run, target)


KIND = FaultKind(
    name="broker-pause", target="broker", play=pause_broker, scope="cluster", needs=("brokers",),
    params={"paused_s": Param((int, float), 10.0, minimum=0)},
    help="freeze a broker (SIGSTOP; docker pause for a container), thaw it after paused_s")
