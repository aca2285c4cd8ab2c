"""The run's evidence budget (scenario `evidence.budget`, `--evidence-budget`): the run directory watched as the run
goes, and the workload ended early once its evidence reaches the budget's mark.

The evidence is everything in the run directory but what is not evidence (RunLayout.not_evidence: the embedded
brokers' data, which the topics' retention bounds, and the drivers' scratch, which Spark removes as a driver
stops). The workload ends once the evidence and what the backlog will add reach MARK of the budget: the records the
streamlets have not processed yet are still recorded and stored while the pipeline drains, as are the reports. The
faults not yet played are skipped; the checker reports the run as cut short, its later periods unknown (history
BUDGET_REACHED).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from harness.evidence.history import BUDGET, BUDGET_REACHED, History
from harness.evidence.layout import RunLayout
from harness.process.usage import entries_bytes
from harness.runner.periodic import PeriodicSampler

MARK = 0.9


def evidence_bytes(layout: RunLayout) -> int:
    """Disk the run directory's evidence takes: every entry of it but those that are not evidence."""
    return sum(size for name, size in entries_bytes(layout.root).items() if name not in layout.not_evidence)


@dataclass(frozen=True)
class Backlog:
    """The workload's records so far: acknowledged, and those still to process or record (the streamlets' lag and
    the topic recorder's, summed)."""

    acked: int
    unprocessed: int

    def bytes_to_come(self, evidence: int) -> int:
        """What the drain will add, at the evidence's bytes per acknowledged record for each record to process.
        An estimate from above: a record is recorded as sent and again at each hop, so the evidence per
        acknowledged record is at least what one hop adds per record (a pipeline that writes fewer or smaller
        records than it reads adds less)."""
        return evidence * self.unprocessed // self.acked if self.acked else 0


class EvidenceBudget(PeriodicSampler):
    """Measures the evidence every `interval_s`; once it and what the `backlog` will add reach MARK of
    `budget_bytes` (or where their growth since the last look would take them there before the next), records it
    and calls `end_workload` with the reason, once. `why`: that reason from then on (None before)."""

    def __init__(
        self,
        layout: RunLayout,
        budget_bytes: int,
        history: History,
        end_workload: Callable[[str], None],
        backlog: Callable[[], Backlog],
        interval_s: float = 5.0,
    ):
        super().__init__("evidence-budget", interval_s)
        self.layout, self.budget_bytes, self.history, self.end_workload = layout, budget_bytes, history, end_workload
        self.backlog = backlog
        self.why: str | None = None
        self._last = 0
        history.record(BUDGET, budget_bytes=budget_bytes)

    def sample(self) -> None:
        if self.why is not None:
            return
        size = evidence_bytes(self.layout)
        to_come = self.backlog().bytes_to_come(size)
        total = size + to_come
        growth, self._last = max(0, total - self._last) if self._last else 0, total
        mark = MARK * self.budget_bytes
        if total + growth >= mark:  # at the mark now, or before the next look
            self.history.record(
                BUDGET_REACHED, budget_bytes=self.budget_bytes, evidence_bytes=size, backlog_bytes=to_come
            )
            self.why = (
                f"the run's evidence reached {size / 1e6:,.1f} MB, {size / self.budget_bytes:.0%} of its budget "
                f"({self.budget_bytes / 1e6:,.1f} MB)"
                + (f"; the records in flight will add about {to_come / 1e6:,.1f} MB" if to_come else "")
                + ("" if total >= mark else f"; it would pass {MARK:.0%} before the next look")
            )
            self.end_workload(self.why)
