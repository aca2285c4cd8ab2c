"""What the faults on a streamlet share: find its driver, stop it, record where it was, start it again."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from harness.errors import HarnessError
from harness.evidence.history import CONSUMER_POSITION, PROCESS_KILLED
from harness.faults.kind import FaultKind, TargetGone
from harness.faults.target import Pipeline


def running_driver(run: Pipeline, kind: str, streamlet: str):
    """The streamlet's driver; TargetGone when it is not running (it ended by itself: the fault is skipped)."""
    proc = run.drivers.get(streamlet)
    if proc is None:
        raise HarnessError(f"{kind}: no streamlet {streamlet!r} in this run")
    if not proc.running():
        proc = run.next_run(streamlet)  # a job run on a schedule, between two runs: the next one
    if proc is None or not proc.running():
        raise TargetGone(f"the driver of {streamlet} is not running")
    return proc


@contextmanager
def restarted_after(run: Pipeline, kind: FaultKind, streamlet: str, **fields) -> Iterator[dict]:
    """Around a fault that stops a streamlet's driver: on the way out, whatever happened, the driver is started
    again (an undo, retried at the drain when it fails). The block may add fields to the fault_ended record
    through the dict it is given."""
    ended = dict(fields)
    with run.undos.undoing(
        kind.name, streamlet, f"restart the driver of {streamlet}", lambda: restart(run, kind, streamlet, **ended)
    ):
        yield ended


def stop_driver(run: Pipeline, streamlet: str, sig: str) -> None:
    """SIGKILL the driver's whole session (a crash), or SIGTERM it (a graceful stop between batches)."""
    proc = run.drivers[streamlet]
    code = proc.kill() if sig == "SIGKILL" else proc.stop(timeout=60)
    run.history.record(PROCESS_KILLED, process=f"streamlet-{streamlet}", pid=proc.pid, signal=sig, exit_code=code)


def restart(run: Pipeline, kind: FaultKind, streamlet: str, **fields) -> None:
    """Start the streamlet again and end the fault once it runs batches (or has failed, which is recorded).
    Idempotent: a driver already started again (by an earlier try that did not see it up) is waited for."""
    proc = run.drivers[streamlet]
    if not proc.running():
        proc = run.start_driver(streamlet)
    up = run.wait_up(streamlet)
    kind.ended(run, streamlet, new_pid=proc.pid, restarted=up, **fields)


def record_position(run: Pipeline, streamlet: str) -> dict[tuple[str, int], int]:
    """Record (and return) where a stopped streamlet had committed up to: where records start to be skipped
    if it does not resume from there."""
    committed = run.committed_offsets(streamlet)
    run.history.record(
        CONSUMER_POSITION, streamlet=streamlet, partitions=[[t, p, o] for (t, p), o in sorted(committed.items())]
    )
    return committed
