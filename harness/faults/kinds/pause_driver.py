"""pause-driver: freeze a streamlet's driver, its whole process session (SIGSTOP, as a long GC pause or a suspended
VM does), thaw it after `paused_s` (SIGCONT) while the brokers, producer transactions and database sessions run on
around it.

The thaw's record in the history holds the size of the driver's log then, and the run records the brokers' producer
of each batch (producers.csv): the report's "A paused driver" (harness/checker/checks/pauses.py) names the timeouts
the pause outlasted, at the job's own settings, what the brokers made of its producers and what its log said after.
"""

from __future__ import annotations

import time

from harness.evidence.history import PROCESS_PAUSED, PROCESS_RESUMED
from harness.faults.drivers import running_driver
from harness.faults.kind import FaultKind, Param
from harness.faults.target import Pipeline


def pause_driver(run: Pipeline, streamlet: str, paused_s: float) -> None:
    proc = running_driver(run, KIND.name, streamlet)
    KIND.begun(run, streamlet, pid=proc.pid, paused_s=paused_s)
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
    log = run.layout.log(f"streamlet-{streamlet}")
    size = log.stat().st_size if log.is_file() else None
    run.history.record(PROCESS_RESUMED, process=f"streamlet-{streamlet}", pid=proc.pid, log_bytes=size)
    KIND.ended(run, streamlet, running=proc.running(), batches=run.wait_up(streamlet))


KIND = FaultKind(
    name="pause-driver",
    target="streamlet",
    play=pause_driver,
    records_producers=True,
    draw=lambda rng: {"paused_s": round(rng.uniform(5.0, 40.0), 1)},
    params={"paused_s": Param((int, float), 20.0, minimum=0)},
    help="freeze a streamlet's driver, its whole session (SIGSTOP, a long GC pause), thaw it after paused_s; "
    "the report names the Kafka timeouts it outlasted and the brokers' view of its producers",
)
