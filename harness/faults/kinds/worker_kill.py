"""worker-kill: SIGKILL a worker of the Spark standalone cluster and every executor it runs, start it again
after `down_s`. The applications that had executors there lose them; the master gives them new ones on the
other workers (or on this one once it is back)."""

from __future__ import annotations

from harness.errors import HarnessError
from harness.faults.kind import FaultKind, Param
from harness.faults.processes import Restartable, kill_then_start
from harness.faults.target import Pipeline
from harness.spark.standalone import READY_TIMEOUT_S


def kill_worker(run: Pipeline, target: str, down_s: float) -> None:
    cluster = run.spark_cluster
    if cluster is None:
        raise HarnessError(f"{KIND.name}: needs the Spark standalone cluster the harness starts")
    worker = cluster.worker(target)
    lost = [e for e in cluster.executors() if e.worker == target]
    # worker.kill(): SIGKILL to the whole session, the worker and the executor JVMs it started
    victim = Restartable(
        worker.name,
        worker.pid,
        "spark-worker",
        worker.kill,
        lambda: _start_worker(cluster, target),
        lambda: cluster.worker(target).running(),
    )
    kill_then_start(run, KIND, target, victim, down_s, executors=[[e.app_id, e.executor_id] for e in lost])


def _start_worker(cluster, target: str) -> int:
    """Start the worker when it is down and wait until the master lists it (idempotent)."""
    if not cluster.worker(target).running():
        cluster.start_worker(target, wait=False)
    cluster.wait_workers([target], READY_TIMEOUT_S)
    return cluster.worker(target).pid


KIND = FaultKind(
    name="worker-kill",
    target="worker",
    play=kill_worker,
    scope="cluster",
    needs=("spark-cluster",),
    draw=lambda rng: {"down_s": round(rng.uniform(3.0, 8.0), 1)},
    params={"down_s": Param((int, float), 10.0, minimum=0)},
    help="SIGKILL a Spark standalone worker and its executors, start it again after down_s",
)
