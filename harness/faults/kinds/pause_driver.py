"""pause-driver: freeze a streamlet's driver, its whole process session (SIGSTOP, as a long GC pause or a suspended
VM does), thaw it after `paused_s` (SIGCONT) while the brokers, producer transactions and database sessions run on
around it.

The fault names, in fault_begun, the timeouts the pause outlasts (`crosses`): those of Kafka's clients and brokers
that may act on a frozen client, at Kafka's defaults (a job setting its own is not read); which of them acted (a
fenced or expired producer, a dropped connection, a query that failed) the run's evidence shows after it.
"""

from __future__ import annotations

import time

from harness.evidence.history import PROCESS_PAUSED, PROCESS_RESUMED
from harness.faults.drivers import running_driver
from harness.faults.kind import FaultKind, Param
from harness.faults.target import Pipeline

# The timeouts around a driver that a frozen one may outlast, at Kafka's defaults (ms), and who acts on each.
TIMEOUTS = {
    "request.timeout.ms": (30_000, "a producer's or consumer's request in flight expires: the batch is retried"),
    "transaction.timeout.ms": (60_000, "the coordinator aborts a producer's open transaction and fences it"),
    "delivery.timeout.ms": (120_000, "a producer's unsent records expire: the write fails"),
    "max.poll.interval.ms": (300_000, "a group consumer is taken out of its group (Spark's source uses none)"),
    "connections.max.idle.ms": (600_000, "the broker closes the frozen client's idle connections"),
}


def crossed(paused_s: float) -> list[dict]:
    """The timeouts a pause of `paused_s` outlasts, shortest first."""
    return [
        {"timeout": name, "ms": ms, "effect": effect}
        for name, (ms, effect) in sorted(TIMEOUTS.items(), key=lambda item: item[1][0])
        if paused_s * 1000 > ms
    ]


def pause_driver(run: Pipeline, streamlet: str, paused_s: float) -> None:
    proc = running_driver(run, KIND.name, streamlet)
    KIND.begun(run, streamlet, pid=proc.pid, paused_s=paused_s, crosses=crossed(paused_s))
    with run.undos.undoing(
        KIND.name, streamlet, f"resume the driver of {streamlet}", lambda: _resumed(run, streamlet, proc)
    ):
        proc.pause()
        if not proc.is_paused():  # SIGSTOP refused or ignored (a process of a container's own): not as declared
            KIND.missed(run, streamlet, "its driver did not stop on SIGSTOP")
        run.history.record(PROCESS_PAUSED, process=f"streamlet-{streamlet}", pid=proc.pid, signal="SIGSTOP")
        time.sleep(paused_s)


def _resumed(run: Pipeline, streamlet: str, proc) -> None:
    """Thaw the driver (idempotent: SIGCONT to a running or ended one does nothing) and end the fault once it runs
    batches again, or has failed, which is recorded."""
    proc.resume()
    run.history.record(PROCESS_RESUMED, process=f"streamlet-{streamlet}", pid=proc.pid)
    KIND.ended(run, streamlet, running=proc.running(), batches=run.wait_up(streamlet))


KIND = FaultKind(
    name="pause-driver",
    target="streamlet",
    play=pause_driver,
    draw=lambda rng: {"paused_s": round(rng.uniform(5.0, 40.0), 1)},
    params={"paused_s": Param((int, float), 20.0, minimum=0)},
    help="freeze a streamlet's driver, its whole session (SIGSTOP, a long GC pause), thaw it after paused_s; "
    "fault_begun names the Kafka timeouts the pause outlasts",
)
