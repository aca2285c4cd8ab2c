"""broker-pause: SIGSTOP a broker (its sockets stay open, nothing answers), SIGCONT it after `paused_s`."""

from __future__ import annotations

import time

from harness.faults.brokers import broker
from harness.faults.kind import FaultKind, Param
from harness.faults.target import Pipeline


def pause_broker(run: Pipeline, target: str, paused_s: float = 10.0) -> None:
    node = broker(run, KIND.name, target)
    KIND.begun(run, target, pid=node.pid)
    node.pause()
    run.history.record("process_paused", process=node.name, pid=node.pid, signal="SIGSTOP")
    try:
        time.sleep(paused_s)
    finally:
        node.resume()
    run.history.record("process_resumed", process=node.name, pid=node.pid, signal="SIGCONT")
    KIND.ended(run, target)


KIND = FaultKind(
    name="broker-pause", target="broker", play=pause_broker, scope="cluster", needs=("kafka-cluster",),
    params={"paused_s": Param((int, float), 10.0, minimum=0)},
    help="SIGSTOP a broker, SIGCONT it after paused_s")
