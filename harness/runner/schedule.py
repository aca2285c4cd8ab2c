"""A job that ends after each run (a trigger of availableNow or once), started again on the scenario's schedule
(`applications.NAME.schedule.every_s`), as a scheduler starts it: a run begins `every_s` after the last one began,
or as soon as that one has ended when it took longer; never two at once, none once the run stops its drivers. A
fault waiting for a run of it (kill-driver) takes the next one (Streamlets.next_run). A run's end (its exit with
code 0) is not a failure."""

from __future__ import annotations

import time
from typing import Protocol

from harness.errors import HarnessError
from harness.runner.periodic import PeriodicSampler

LOOK_S = 0.25  # how often the schedule looks: a run starts at most this late


class Drivers(Protocol):
    """What the schedule uses of the run's drivers (harness/runner/streamlets.py)."""

    stopped: set[str]  # stopped by the run at its end
    failed: dict[str, str]  # ended by themselves, not as a run ends
    started_at: dict[str, float]  # when each last started (monotonic)

    def between_runs(self, name: str) -> bool: ...

    def exited(self) -> list[str]: ...

    def start(self, name: str): ...


class Schedule(PeriodicSampler):
    def __init__(self, streamlets: Drivers, every_s: dict[str, float]):
        super().__init__("schedule", LOOK_S)
        self.streamlets, self.every_s = streamlets, every_s

    def sample(self) -> None:
        s = self.streamlets
        for name, every_s in self.every_s.items():
            # A fault that stops the job leaves it killed or stopped, not between runs: the fault starts it again.
            if name in s.stopped or name in s.failed or not s.between_runs(name):
                continue
            s.exited()  # the run's end recorded before the next run's start
            if time.monotonic() - s.started_at[name] >= every_s:
                try:
                    s.start(name)
                except HarnessError:  # the run is closing (its supervisor refuses): nothing more starts
                    return
