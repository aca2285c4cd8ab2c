"""A thread that calls `sample()` every `interval_s` until stopped: what the run's samplers share."""

from __future__ import annotations

import threading


class PeriodicSampler:
    def __init__(self, name: str, interval_s: float):
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)

    def start(self):
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval_s)

    def sample(self) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=15)
