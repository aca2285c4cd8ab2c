"""A fault kind of one's own: freeze a streamlet's driver (its Python and its JVM) with SIGSTOP for a while,
as a long garbage-collection pause or a stalled host would, then let it go on with SIGCONT.

Use it in a scenario (the scenario's folder, or a folder under `imports:`, holds this file):

    faults:
      - {kind: "freeze:KIND", target: processor, start_s: 20, frozen_s: 8}

docs/faults.md explains each part.
"""

from __future__ import annotations

import time

from harness.faults import FaultKind, Param


def freeze(run, target: str, frozen_s: float) -> None:
    """Blocks until the driver runs again: the chaos driver plays the next fault on this target after it."""
    driver = run.drivers[target]
    driver.pause()  # SIGSTOP to every process of the driver's session; returns once it has stopped
    KIND.begun(run, target, pid=driver.pid, frozen_s=frozen_s)
    try:
        time.sleep(frozen_s)
    finally:
        driver.resume()
        KIND.ended(run, target)


KIND = FaultKind(
    name="freeze-driver",
    target="streamlet",  # a streamlet of the blueprint; the scenario parser checks it
    play=freeze,
    params={"frozen_s": Param((int, float), 10.0, minimum=0)},  # how long the driver stays frozen, seconds
    scope="streamlet",  # it disturbs its target: recovery is that streamlet's first batch after the fault
    restarts=False,  # the same driver goes on; nothing is restarted
    help="SIGSTOP a streamlet's driver for frozen_s, then SIGCONT it",
)
