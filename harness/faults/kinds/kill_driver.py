"""kill-driver: SIGKILL (a crash) or SIGTERM (a graceful stop) a streamlet's driver, then start it again.

The restart uses the same checkpoint directories, so it resumes from the last committed batch; a batch
planned but not committed is replayed. `at: after-write` first arms the driver's crash point and kills it
while a batch is held between its write and Spark's commit: that batch is replayed for certain. A driver with no
crash point (a team's own job, a streamlet writing only with Spark's own sinks) is killed after-write at the moment
its outputs show, as for in-flight.
`at: in-flight` needs no crash point (Spark's own sinks): it kills while a batch is planned and not
committed and some of its output is already written (harness.faults.inflight). A Real-time Mode application's
batch is in flight from one checkpoint to the next: in-flight and after-write both kill it once it has written
output since its last checkpoint, all of which the restart emits again.
"""

from __future__ import annotations

import json
import time

from harness.errors import WaitTimeout
from harness.faults.drivers import restarted_after, running_driver, stop_driver
from harness.faults.inflight import InFlight, OutputWatch, batch_in_flight, real_time_in_flight
from harness.faults.kind import FaultKind, Param
from harness.faults.target import Pipeline
from harness.waiting import wait_for


def kill_driver(run: Pipeline, streamlet: str, signal: str, restart_after_s: float, at: str) -> None:
    proc = running_driver(run, KIND.name, streamlet)
    if at == "in-flight" or at == "after-write" and not run.has_crash_point(streamlet):
        _kill_in_flight(run, streamlet, proc, at)
    else:
        held = _hold_after_write(run, streamlet, proc) if at == "after-write" else {}
        if signal == "SIGKILL":
            proc.pause()  # frozen first: what it wrote, it wrote before the moment recorded, however slow the harness
        KIND.begun(run, streamlet, signal=signal, pid=proc.pid, at=at, **held)
    with restarted_after(run, KIND, streamlet):
        stop_driver(run, streamlet, "SIGKILL" if at == "in-flight" else signal)
        time.sleep(restart_after_s)  # the outage itself is part of the fault


# How long a kill waits for its moment (a batch held after its write, or in flight with output written): longer
# than a driver upstream takes to restart on a busy machine (over 60 s with a dozen JVMs on two cores), since the
# streamlet has no input while it is down.
MOMENT_TIMEOUT_S = 150.0


def _hold_after_write(run: Pipeline, streamlet: str, proc, timeout_s: float = MOMENT_TIMEOUT_S) -> dict:
    """Arm the streamlet's crash point and wait until a batch holds there; returns {held_query, held_batch}.

    When no batch writes within `timeout_s` (no input), the arm is withdrawn,
    the history says so, and the kill goes ahead at whatever moment it is.
    """
    arm, held = run.layout.crash_arm(streamlet), run.layout.crash_held(streamlet)
    arm.parent.mkdir(parents=True, exist_ok=True)
    held.unlink(missing_ok=True)
    arm.touch()
    try:
        wait_for(
            held.exists,
            timeout=timeout_s,
            interval=0.05,
            what=f"a batch of {streamlet} to finish its write",
            abort=lambda: None if proc.running() else "the driver exited",
        )
    except WaitTimeout as exc:
        arm.unlink(missing_ok=True)
        if not held.exists():  # the arm may have been taken between the timeout and the unlink
            KIND.missed(run, streamlet, str(exc))
            return {}
    state = wait_for(lambda: _read_held(held), timeout=5, interval=0.05, what=f"{held} to be readable")
    return {"held_query": state["query"], "held_batch": state["batch"]}


STEP_S = 0.05  # how long the driver runs at most between two looks while a batch of it is in flight
LOOK_S = 0.05  # how long a look waits for output on the streamlet's topics (a fetch or two)


def _kill_in_flight(run: Pipeline, streamlet: str, proc, at: str, timeout_s: float = MOMENT_TIMEOUT_S) -> None:
    """Freeze the driver at a moment for a SIGKILL: a batch in flight with some of its output written; the
    history names that batch (held_query, held_batch, planned_ms) and the moment asked for (`at`). Once a batch
    is planned, the driver runs in short steps and is frozen (SIGSTOP) between them while the harness looks:
    frozen, it can neither commit the batch nor write more, so what a look finds (no commits/N, output newer than
    offsets/N) still holds at the kill, however slowly the harness's own loop runs on a busy machine. Without
    such a moment within `timeout_s` (no input), the history says so and the kill goes ahead at whatever moment
    it is."""
    checkpoints = run.layout.checkpoints(streamlet)
    in_flight = real_time_in_flight if run.real_time(streamlet) else batch_in_flight
    watch = OutputWatch(
        run.kafka, run.output_topics(streamlet), run.layout.workdir(streamlet), run.output_probes(streamlet)
    )
    deadline = time.monotonic() + timeout_s
    held: InFlight | None = None
    looks = 0
    try:
        while held is None and time.monotonic() < deadline:
            if not proc.running():
                proc = run.next_run(streamlet) or proc  # a run of a scheduled job ended: its next one
                if not proc.running():
                    break
            flight = in_flight(checkpoints)
            if flight is None:
                watch.poll(0.01)
                continue
            proc.pause()
            looks += 1
            if not flight.committed(checkpoints) and watch.newer_than(flight.planned_ms, LOOK_S):
                held = flight  # stays frozen until the kill
            else:
                proc.resume()
                # The step ends as soon as the batch's output shows: the look then comes right after it, early in
                # a window that may last a few tens of milliseconds of the driver's time.
                watch.newer_than(flight.planned_ms, STEP_S)
    finally:
        watch.close()
        if held is None:
            proc.resume()  # never left frozen by a look that failed
    fields = {"held_query": held.query, "held_batch": held.batch, "planned_ms": held.planned_ms} if held else {}
    KIND.begun(run, streamlet, signal="SIGKILL", pid=proc.pid, at=at, frozen_looks=looks, **fields)
    if held is None:
        KIND.missed(run, streamlet, f"no batch in flight with output written within {timeout_s:.0f}s")


def _read_held(path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _graceful_stop_finishes_the_batch(params: dict) -> tuple[str, str] | None:
    if params["at"] in ("after-write", "in-flight") and params["signal"] != "SIGKILL":
        return "at", f"{params['at']} needs signal SIGKILL (a graceful stop would finish the batch)"
    return None


def _draw(rng) -> dict:
    """A crash more often than a graceful stop, and the crash after a write in about half the cases."""
    signal = rng.choice(("SIGKILL", "SIGKILL", "SIGTERM"))
    at = rng.choice(("anytime", "after-write")) if signal == "SIGKILL" else "anytime"
    return {"signal": signal, "at": at, "restart_after_s": round(rng.uniform(1.0, 4.0), 1)}


KIND = FaultKind(
    name="kill-driver",
    target="streamlet",
    play=kill_driver,
    restarts=True,
    check=_graceful_stop_finishes_the_batch,
    draw=_draw,
    params={
        "signal": Param(str, "SIGKILL", choices=("SIGKILL", "SIGTERM")),
        "restart_after_s": Param((int, float), 3.0, minimum=0),
        "at": Param(str, "anytime", choices=("anytime", "after-write", "in-flight")),
    },
    help="kill a streamlet's driver (SIGKILL crash or SIGTERM graceful), restart it from its checkpoint; "
    "at: after-write kills while a batch is written but not yet committed (at its crash point; a driver without "
    "one, when its outputs show the batch); "
    "at: in-flight does the same for Spark's own sinks, watching offsets/N, commits/N and the output "
    "(a Real-time Mode job's batch: output since its last commits/N)",
)
