"""The CPU priority of processes the harness started: lowered while they only prepare, given back when they matter.

Linux schedules a session's processes as one group (autogroup, where the kernel has it): a process's niceness
counts only against the others of its session, and every process the harness starts has a session of its own. So
a process is niced twice: its session's group (/proc/PID/autogroup) and every thread of its process group
(setpriority). Raising a priority back needs the right to (root, or RLIMIT_NICE): where it is refused, the process
keeps the lower one.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Callable, Iterable

WATCH_S = 0.1  # how soon a process started is niced


def renice(pids: Iterable[int], niceness: int) -> None:
    """Each process of `pids` (the leader of its process group and session) and all it runs at `niceness`; a process
    gone or a change refused is left as it is."""
    for pid in pids:
        try:
            os.setpriority(os.PRIO_PGRP, pid, niceness)
        except OSError:
            pass
        try:
            Path(f"/proc/{pid}/autogroup").write_text(str(niceness))
        except OSError:  # gone, refused, or a kernel without autogroups
            pass


def renice_threads(niceness: int) -> None:
    """Every thread of this process at `niceness` (on Linux a thread has its own); a change refused is left."""
    for tid in os.listdir("/proc/self/task"):
        try:
            os.setpriority(os.PRIO_PROCESS, int(tid), niceness)
        except OSError:  # ended, or refused
            pass


class Niced:
    """While open, the processes `pids()` names, as each appears, at `niceness` (a thread's watch, every WATCH_S)."""

    def __init__(self, pids: Callable[[], Iterable[int]], niceness: int):
        self.pids = pids
        self.niceness = niceness
        self._seen: set[int] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="niced", daemon=True)

    def __enter__(self) -> Niced:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._nice_new()

    def _watch(self) -> None:
        while not self._stop.wait(WATCH_S):
            self._nice_new()

    def _nice_new(self) -> None:
        new = [pid for pid in self.pids() if pid not in self._seen]
        renice(new, self.niceness)
        self._seen.update(new)
