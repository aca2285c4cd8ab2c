"""broker-stop: stop a broker cleanly (SIGTERM and its controlled shutdown; docker stop for a container), start it
again after `down_s`. A rolling restart's step, where broker-kill is a crash."""

from __future__ import annotations

import time

from harness.faults.kind import FaultKind, Param
from harness.faults.target import Pipeline


def stop_broker(run: Pipeline, target: str, down_s: float = 10.0) -> None:
    """Returns once the restarted broker is listed again."""
    node = run.broker(target)
    pid = node.pid
    KIND.begun(run, target, pid=pid)
    node.stop(timeout=30)
    run.history.record("process_stopped", process=node.name, pid=pid, signal="SIGTERM")
    time.sleep(down_s)
    node.start(wait=True, timeout=120)
    run.history.record("process_started", process=node.name, pid=node.pid, role="broker")
    KIND.ended(run, target, new_pid=node.pid)


KIND = FaultKind(
    name="broker-stop", target="broker", play=stop_broker, scope="cluster", needs=("brokers",),
    params={"down_s": Param((int, float), 10.0, minimum=0)},
    help="stop a broker cleanly (SIGTERM, controlled shutdown; docker stop for a container), start it after down_s")
