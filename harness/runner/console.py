"""What a run shows while it goes on: notes (one line each) and a live status line.

On a terminal the status line is rewritten in place every second; in a log
(CI, nohup) it is printed every `log_interval_s` so the log stays readable.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Console:
    def __init__(self, stream: TextIO | None = None, quiet: bool = False, log_interval_s: float = 15.0):
        self.stream = stream or sys.stdout
        self.quiet = quiet
        self.live = not quiet and self.stream.isatty()
        self.interval_s = 1.0 if self.live else log_interval_s
        self._t0 = time.monotonic()
        self._last_status = float("-inf")
        self._status_shown = False

    def _clear_status(self) -> None:
        if self._status_shown:
            self.stream.write("\r\x1b[K")
            self._status_shown = False

    def say(self, message: str) -> None:
        if self.quiet:
            return
        self._clear_status()
        self.stream.write(f"[{time.monotonic() - self._t0:6.1f}s] {message}\n")
        self.stream.flush()

    def due(self) -> bool:
        """Would a status be shown now? Lets the caller skip building one that would be dropped."""
        return not self.quiet and time.monotonic() - self._last_status >= self.interval_s

    def status(self, text: str) -> None:
        """A live status; throttled, so it can be called every loop."""
        if not self.due():
            return
        self._last_status = time.monotonic()
        if self.live:
            self.stream.write("\r\x1b[K" + text)
            self._status_shown = True
            self.stream.flush()
        else:
            self.say(text)

    def close(self) -> None:
        self._clear_status()
