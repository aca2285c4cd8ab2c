"""A fault kind of one's own: freeze a streamlet's driver (its Python and its JVM) with SIGSTOP for a while,
as a long garbage-collection pause or a stalled host would, then let it go on with SIGCONT.

Use it in a scenario (the scenario's folder, or a folder under `imports:`, holds this file):

    faults:
      - {kind: "freeze:KIND", target: processor, start_s: 20, frozen_s: 8}

docs/faults.md explains each part.
"""

from __future__ import annotations

import time

from harness.faults import FaultKind, Param, TargetGone


def freeze(run, target: str, frozen_s: float) -> None:
    """Blocks until the driver runs again: the chaos driver plays the next fault on this target after it."""
    driver = run.drivers[target]
    if not driver.running():
        raise TargetGone(f"the driver of {target} is not running")  # the fault is skipped, the run judged as usual
    KIND.begun(run, target, pid=driver.pid, frozen_s=frozen_s)
    # The undo runs however the block ends; if it fails, it is recorded and tried again when the run drains.
    with run.undos.undoing(KIND.name, target, f"resume the driver of {target}", lambda: thaw(run, target)):
        driver.pause()  # SIGSTOP to every process of the driver's session; returns once it has stopped
        time.sleep(frozen_s)


def thaw(run, target: str) -> None:
    run.drivers[target].resume()
    KIND.ended(run, target)


KIND = FaultKind(
    name="freeze-driver",
    target="streamlet",  # a streamlet of the blueprint; the scenario parser checks it
    play=freeze,
    params={"frozen_s": Param((int, float), 10.0, minimum=0)},  # how long the driver stays frozen, seconds
    scope="streamlet",  # it disturbs its target: recovery is that streamlet's first batch after the fault
    restarts=False,  # the same driver goes on; nothing is restarted
    help="SIGSTOP a streamlet's driver for frozen_s, then SIGCONT it",
    draw=lambda rng: {"frozen_s": round(rng.uniform(2.0, 10.0), 1)},  # what a storm plays it with
)
