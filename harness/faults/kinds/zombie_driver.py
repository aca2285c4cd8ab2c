"""zombie-driver: two drivers on one checkpoint, as when a scheduler restarts a driver it believes dead while the old
one is only stalled (a long GC pause, a node cut from its scheduler).

The target's driver is frozen (SIGSTOP of its session) and set aside (its pid file `streamlet-NAME-zombie`); a
second driver starts on the same checkpoint and runs batches. After `frozen_s` the first is thawed: both run, the
zombie finishing what it had in flight, until, `overlap_s` later, it is SIGKILLed as a scheduler that learns of it
would (unless it ended first: Spark may notice the other's commits, "Concurrent update to the log"). The history
says when each happened and how each driver ended; producers.csv (the brokers' producer of each batch) tells the two
drivers' writes to Kafka apart (harness/checker/checks/zombies.py).
"""

from __future__ import annotations

import time

from harness.errors import WaitTimeout
from harness.evidence.history import PROCESS_EXITED, PROCESS_KILLED, PROCESS_PAUSED, PROCESS_RESUMED
from harness.faults.drivers import running_driver
from harness.faults.kind import FaultKind, Param
from harness.faults.target import Pipeline
from harness.waiting import wait_for


def zombie_driver(run: Pipeline, streamlet: str, frozen_s: float, overlap_s: float) -> None:
    first = running_driver(run, KIND.name, streamlet)
    first.pause()
    frozen_at = time.monotonic()
    zombie = run.set_aside_driver(streamlet)
    KIND.begun(run, streamlet, pid=zombie.pid, frozen_s=frozen_s, overlap_s=overlap_s)
    if not zombie.is_paused():  # SIGSTOP refused or ignored: the two drivers overlap from the start
        KIND.missed(run, streamlet, "its driver did not stop on SIGSTOP")
    run.history.record(PROCESS_PAUSED, process=zombie.name, pid=zombie.pid, signal="SIGSTOP")
    with run.undos.undoing(KIND.name, streamlet, f"stop the zombie driver of {streamlet}", lambda: _ended(run, zombie)):
        second = run.start_driver(streamlet)
        up = run.wait_up(streamlet)
        time.sleep(max(0.0, frozen_s - (time.monotonic() - frozen_at)))
        zombie.resume()
        run.history.record(PROCESS_RESUMED, process=zombie.name, pid=zombie.pid)
        try:
            wait_for(lambda: not zombie.running() or not second.running(), timeout=overlap_s, what="a driver to end")
        except WaitTimeout:  # neither ended: the scheduler kills the zombie
            pass
    KIND.ended(run, streamlet, new_pid=second.pid, restarted=up, second_running=second.running())


def _ended(run: Pipeline, zombie) -> None:
    """The zombie ended (idempotent): how, if it ended by itself; SIGKILLed, if it still ran."""
    if zombie.running():
        code = zombie.kill()
        run.history.record(PROCESS_KILLED, process=zombie.name, pid=zombie.pid, signal="SIGKILL", exit_code=code)
    else:
        run.history.record(PROCESS_EXITED, process=zombie.name, pid=zombie.pid, exit_code=zombie.wait_exit(1.0))


KIND = FaultKind(
    name="zombie-driver",
    target="streamlet",
    play=zombie_driver,
    restarts=True,
    records_producers=True,
    solo="a second driver on the target's checkpoint: another fault on it would act on either",
    params={
        "frozen_s": Param((int, float), 20.0, minimum=0),
        "overlap_s": Param((int, float), 10.0, minimum=0),
    },
    help="freeze a streamlet's driver, start a second one on the same checkpoint, thaw the first after frozen_s "
    "(both run), SIGKILL it overlap_s later unless it ended; producers.csv tells their writes to Kafka apart",
)
