"""Records every application's committed batches as Spark commits them (harness/evidence/checkpoint.py CommitLog),
into its progress file: the checker learns when each batch ran from there, since a checkpoint keeps only its last
batches."""

from __future__ import annotations

from harness.evidence.checkpoint import CommitLog
from harness.evidence.layout import RunLayout
from harness.runner.periodic import PeriodicSampler


class CommitRecorder(PeriodicSampler):
    def __init__(self, layout: RunLayout, applications: list[str], interval_s: float = 0.5):
        super().__init__("commit-recorder", interval_s)
        self.logs = [CommitLog(layout.checkpoints(name), layout.progress(name)) for name in applications]

    def sample(self) -> None:
        for log in self.logs:
            try:
                log.record()
            except OSError:  # a checkpoint folder replaced as it looked (a redeploy): the next look reads it
                continue

    def stop(self) -> None:
        super().stop()
        self.sample()  # what was committed since the last look
