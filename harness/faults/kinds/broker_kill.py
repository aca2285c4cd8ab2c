"""broker-kill: SIGKILL a broker (no controlled shutdown), start it again after `down_s`."""

from __future__ import annotations

from harness.faults.kind import FaultKind, Param
from harness.faults.processes import Restartable, kill_then_start, start_broker
from harness.faults.target import Pipeline


def kill_broker(run: Pipeline, target: str, down_s: float) -> None:
    """Returns once the restarted broker is listed again."""
    node = run.broker(target)
    broker = Restartable(node.name, node.pid, "broker", node.kill, lambda: start_broker(node), node.running)
    kill_then_start(run, KIND, target, broker, down_s)


KIND = FaultKind(
    name="broker-kill",
    target="broker",
    play=kill_broker,
    scope="cluster",
    needs=("brokers",),
    draw=lambda rng: {"down_s": round(rng.uniform(3.0, 10.0), 1)},
    params={"down_s": Param((int, float), 10.0, minimum=0)},
    help="SIGKILL a broker, restart it after down_s",
    weaker="broker-stop",
)
