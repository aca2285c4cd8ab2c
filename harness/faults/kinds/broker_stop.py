"""broker-stop: stop a broker cleanly (SIGTERM and its controlled shutdown; docker stop for a container), start it
again after `down_s`. A rolling restart's step, where broker-kill is a crash."""

from __future__ import annotations

from harness.faults.kind import FaultKind, Param
from harness.faults.processes import Restartable, kill_then_start, start_broker
from harness.faults.target import Pipeline


def stop_broker(run: Pipeline, target: str, down_s: float) -> None:
    """Returns once the restarted broker is listed again."""
    node = run.broker(target)
    broker = Restartable(
        node.name, node.pid, "broker", lambda: node.stop(timeout=30), lambda: start_broker(node), node.running
    )
    kill_then_start(run, KIND, target, broker, down_s, graceful=True)


KIND = FaultKind(
    name="broker-stop",
    target="broker",
    play=stop_broker,
    scope="cluster",
    needs=("brokers",),
    draw=lambda rng: {"down_s": round(rng.uniform(3.0, 10.0), 1)},
    params={"down_s": Param((int, float), 10.0, minimum=0)},
    help="stop a broker cleanly (SIGTERM, controlled shutdown; docker stop for a container), start it after down_s",
)
