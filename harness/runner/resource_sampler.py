"""Samples the memory of every process a run started and the size of its run directory, into the history.

A soak is judged on trends: memory that keeps growing once the processes are
warm, or a run directory growing past what the topics' retention should
bound. One `resources` event every `interval_s`: RSS in MiB per process (with
its pid, so a restart is not mistaken for a leak) and MiB per top-level folder
of the run directory (cluster holds the brokers' data).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from harness.evidence.history import MIB, RESOURCES, History
from harness.process import ManagedProcess
from harness.process.usage import entries_bytes, rss_bytes, session_rss_bytes
from harness.runner.periodic import PeriodicSampler


class ResourceSampler(PeriodicSampler):
    def __init__(
        self, processes: Callable[[], list[ManagedProcess]], run_dir: Path, history: History, interval_s: float = 15.0
    ):
        super().__init__("resource-sampler", interval_s)
        self.processes, self.run_dir, self.history = processes, Path(run_dir), history

    def sample(self) -> None:
        rss = {"harness": {"pid": os.getpid(), "mb": _mb(rss_bytes(os.getpid()))}}
        for proc in self.processes():
            size = session_rss_bytes(proc.record) if proc.running() else None
            if size is not None:
                rss[proc.name] = {"pid": proc.pid, "mb": _mb(size)}
        disk = {name: _mb(size) for name, size in entries_bytes(self.run_dir).items()}
        self.history.record(RESOURCES, rss_mb=rss, disk_mb=disk)

    def stop(self) -> None:
        """Stop sampling, after one last sample: the run's end state is part of the trend."""
        super().stop()
        self.sample()


def _mb(size: int | None) -> float | None:
    return None if size is None else round(size / MIB, 1)
