"""executor-kill: SIGKILL the executor JVM of a streamlet's application on the Spark standalone cluster
while it runs a task. Spark loses the executor and its tasks, asks the master for another, and retries the
tasks there; the driver goes on. The fault ends once the new executor runs, and has retried the lost tasks
(`tasks_retried`: the tasks the other executors started as a second attempt, from their own logs; 0 when none came
within what a driver's restart is given, at least 240 s)."""

from __future__ import annotations

import os
import signal
import time

from harness.errors import HarnessError, WaitTimeout
from harness.evidence.history import PROCESS_KILLED
from harness.faults.kind import FaultKind, Param
from harness.faults.target import Pipeline
from harness.process.supervisor import start_ticks_of
from harness.waiting import Patience, wait_for


def _running(run: Pipeline, app_id: str):
    return [e for e in run.spark_cluster.executors(app_id) if e.pid is not None]


def _busy_executor(run: Pipeline, app_id: str, streamlet: str, deadline: float):
    """An executor of the application and the tasks it is running, caught while it runs one (or, at `deadline`
    without one, as it is). It is returned frozen (SIGSTOP) when caught: its log, read while it cannot write,
    says exactly what it runs at that moment (reading a running executor's log on a busy machine lags behind
    tasks of a few milliseconds). One that is gone before it ran a task (its worker was lost, by another fault
    say) is not the victim: the next one to come up is."""
    while True:
        victim = wait_for(
            lambda: next(iter(_running(run, app_id)), None),
            timeout=max(deadline - time.monotonic(), 1),
            interval=0.2,
            what=f"a running executor of {streamlet}'s application {app_id}",
        )
        while start_ticks_of(victim.pid) and time.monotonic() < deadline:
            tasks = _frozen_tasks(run, victim)
            if tasks:
                return victim, tasks
            time.sleep(0.05)
        if start_ticks_of(victim.pid) or time.monotonic() >= deadline:
            return victim, set()
        time.sleep(0.2)  # until the master no longer lists the gone one


def _frozen_tasks(run: Pipeline, victim) -> set[int]:
    """Freeze the executor and read the tasks it runs: left frozen when it runs some (the caller kills it),
    thawed otherwise."""
    try:
        os.kill(victim.pid, signal.SIGSTOP)
    except ProcessLookupError:
        return set()
    tasks: set[int] = set()
    try:
        tasks = run.spark_cluster.running_tasks(victim)
    finally:
        if not tasks:
            os.kill(victim.pid, signal.SIGCONT)
    return tasks


def kill_executor(run: Pipeline, streamlet: str, timeout_s: float) -> None:
    cluster = run.spark_cluster
    if cluster is None:
        raise HarnessError(f"{KIND.name}: needs the Spark standalone cluster the harness starts")
    app_id = wait_for(
        lambda: cluster.application(run.app_name(streamlet)),
        timeout=timeout_s,
        interval=0.5,
        what=f"the Spark application of {streamlet}",
    )
    victim, tasks = _busy_executor(run, app_id, streamlet, time.monotonic() + timeout_s)
    try:
        KIND.begun(
            run,
            streamlet,
            app_id=app_id,
            executor=victim.executor_id,
            worker=victim.worker,
            pid=victim.pid,
            running_tasks=sorted(tasks),
        )
    except BaseException:
        if tasks:  # frozen by _busy_executor: thawed, the fault had no effect
            os.kill(victim.pid, signal.SIGCONT)
        raise
    try:
        os.kill(victim.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    run.history.record(
        PROCESS_KILLED, process=f"executor-{app_id}-{victim.executor_id}", pid=victim.pid, signal="SIGKILL"
    )
    killed = time.monotonic()
    replacement = wait_for(
        lambda: next((e for e in _running(run, app_id) if e.executor_id != victim.executor_id), None),
        timeout=timeout_s,
        interval=0.2,
        what=f"a new executor of {streamlet}'s application {app_id}",
    )
    # The retry comes once the new executor's JVM has started and registered with the driver, which a busy machine
    # slows down as much as a driver's start: it is given what a driver's restart is given, and at least four
    # times what the replacement took to be launched. It may be lost in turn before it runs the retry (its worker
    # killed by another fault while it starts): the retry then runs on the next one. The logs of every executor
    # of the application but the killed one are read, those that came and went between two looks included.
    patience = Patience(floor_s=run.restart_patience.timeout_s)
    patience.measure(time.monotonic() - killed)
    retried = 0
    if tasks:  # the lost tasks run again on a new executor, as attempt 1 (or later): its own log says so
        try:
            retried = wait_for(
                lambda: cluster.retried_tasks(app_id, besides=victim.executor_id),
                timeout=patience.timeout_s,
                interval=0.2,
                what=f"a retried task on a new executor of {streamlet}'s application {app_id}",
            )
        except WaitTimeout:
            pass
    KIND.ended(
        run,
        streamlet,
        new_executor=replacement.executor_id,
        new_worker=replacement.worker,
        new_pid=replacement.pid,
        tasks_retried=retried,
    )


KIND = FaultKind(
    name="executor-kill",
    target="streamlet",
    play=kill_executor,
    needs=("spark-cluster",),
    params={"timeout_s": Param((int, float), 240.0, minimum=1)},
    help="SIGKILL the executor JVM of a streamlet's application (Spark standalone) while it runs a task; "
    "Spark starts another and retries the lost tasks",
)
