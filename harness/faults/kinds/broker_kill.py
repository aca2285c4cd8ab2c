"""broker-kill: SIGKILL a broker (no controlled shutdown), start it again after `down_s`."""

from __future__ import annotations

import time

from harness.faults.brokers import broker
from harness.faults.kind import FaultKind, Param
from harness.faults.target import Pipeline


def kill_broker(run: Pipeline, target: str, down_s: float = 10.0) -> None:
    """Returns once the restarted broker is listed again."""
    node = broker(run, KIND.name, target)
    KIND.begun(run, target, pid=node.pid)
    pid = node.pid
    node.kill()
    run.history.record("process_killed", process=node.name, pid=pid, signal="SIGKILL")
    time.sleep(down_s)
    node.start(wait=True, timeout=120)
    run.history.record("process_started", process=node.name, pid=node.pid, role="broker")
    KIND.ended(run, target, new_pid=node.pid)


KIND = FaultKind(
    name="broker-kill", target="broker", play=kill_broker, scope="cluster", needs=("kafka-cluster",),
    params={"down_s": Param((int, float), 10.0, minimum=0)},
    help="SIGKILL a broker, restart it after down_s")
