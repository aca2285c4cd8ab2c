"""Polling with a deadline: the only way the harness waits for something to happen."""

from __future__ import annotations

import time
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
