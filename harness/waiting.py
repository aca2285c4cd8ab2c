"""Polling with a deadline: the only way the harness waits for something to happen."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, TypeVar

from harness.errors import WaitTimeout

T = TypeVar("T")


def wait_for(
    condition: Callable[[], T],
    *,
    timeout: float,
    what: str,
    interval: float = 0.2,
    abort: Callable[[], str | None] | None = None,
) -> T:
    """Call `condition` until it returns a truthy value and return that value.

    `abort` is checked on every round; a non-empty string it returns ends the
    wait early with that reason (e.g. "the broker process exited"), so a
    dead process does not cost the whole timeout.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if abort is not None:
            reason = abort()
            if reason:
                raise WaitTimeout(f"gave up waiting for {what}: {reason}")
        if time.monotonic() >= deadline:
            raise WaitTimeout(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


@dataclass
class Patience:
    """How long to wait for something a busy machine slows down, scaled by what was measured of the same thing:
    `floor_s` until a first measure, then at least `factor` times it. A machine that took 100 s to start a driver
    the first time is given 400 s for a restart, not the 240 an idle one needs."""

    floor_s: float
    factor: float = 4.0
    measured_s: float | None = None

    def measure(self, seconds: float) -> None:
        """What the thing took once (the longest of the measures is kept)."""
        self.measured_s = max(seconds, self.measured_s or 0.0)

    @property
    def timeout_s(self) -> float:
        return self.floor_s if self.measured_s is None else max(self.floor_s, self.factor * self.measured_s)
