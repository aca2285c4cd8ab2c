"""Fault kinds of a user's own, for the tests of faults that fail: they use only the public fault API.

`vanish` SIGKILLs a broker and leaves it down (a crash nobody restarts), so a later fault on that broker finds
its target gone. `stuck` impairs nothing but registers an undo that always fails, as a link that cannot be
healed or a broker that cannot be resumed would."""

from __future__ import annotations

import time

from harness.faults import FaultKind, Param


def vanish(run, target: str) -> None:
    node = run.broker(target)
    VANISH.begun(run, target, pid=node.pid)
    node.kill()
    run.history.record("process_killed", process=node.name, pid=node.pid, signal="SIGKILL")


def _never_undone() -> None:
    raise RuntimeError("the thing it broke stays broken")


def stuck(run, target: str, hold_s: float = 1.0) -> None:
    STUCK.begun(run, target)
    with run.undos.undoing(STUCK.name, target, f"unstick {target}", _never_undone):
        time.sleep(hold_s)


VANISH = FaultKind(
    name="vanish",
    target="broker",
    play=vanish,
    scope="cluster",
    needs=("brokers",),
    recovers=False,
    help="SIGKILL a broker and never start it again",
)
STUCK = FaultKind(
    name="stuck",
    target="streamlet",
    play=stuck,
    recovers=False,
    params={"hold_s": Param((int, float), 1.0)},
    help="hold for hold_s, then fail to undo",
)
