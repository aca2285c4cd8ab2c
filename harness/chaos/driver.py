"""The chaos driver: plays a fault schedule against a running pipeline while the workload runs.

One loop, on the harness's main thread: fire each planned fault when its time
comes (the actions block until the pipeline is whole again), notice drivers
that ended by themselves, and tick the caller's progress display. It returns
once every fault was played and the generator is done.
"""

from __future__ import annotations

import time
from typing import Callable

from harness.chaos.actions import ACTIONS
from harness.chaos.schedule import Firing
from harness.errors import HarnessError
from harness.runner.pipeline import PipelineRun


def describe(firing: Firing) -> str:
    params = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in firing.params.items())
    return f"{firing.kind} {firing.target}" + (f" ({params})" if params else "")


def play(run: PipelineRun, firings: list[Firing], overrun_s: float, say: Callable[[str], None],
         on_tick: Callable[[float, int], None] = lambda elapsed, played: None) -> int:
    """Play `firings` (times relative to now); returns how many were played.

    `overrun_s` bounds the whole: the generator must be done and every fault
    played within the last firing time (or the workload duration) plus it.
    """
    t0 = time.monotonic()
    pending = list(firings)
    played = 0
    while True:
        elapsed = time.monotonic() - t0
        for name in run.exited_drivers():
            say(f"streamlet {name} stopped by itself: {run.failed[name].splitlines()[0][:200]}")
        if pending and pending[0].at_s <= elapsed:
            firing = pending.pop(0)
            if firing.target in run.failed:
                run.history.record("fault_skipped", kind=firing.kind, target=firing.target, reason="target is not running")
                say(f"fault skipped: {describe(firing)}: the streamlet is not running")
                continue
            say(f"fault {played + 1}/{len(firings)} at {elapsed:.0f}s: {describe(firing)}")
            ACTIONS[firing.kind](run, firing.target, **firing.params)
            played += 1
            continue
        if not pending and run.generator_done():
            return played
        if elapsed > overrun_s:
            raise HarnessError(f"the workload did not finish within {overrun_s:.0f}s")
        on_tick(elapsed, played)
        time.sleep(0.5)
