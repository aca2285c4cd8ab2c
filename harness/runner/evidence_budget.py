"""The run's evidence budget (scenario `evidence.budget`, `--evidence-budget`): the run directory watched as the run
goes, and the workload ended early once its evidence reaches the budget's mark.

The evidence is everything in the run directory but the embedded brokers' data (`cluster/`, which the topics'
retention bounds). The workload ends at MARK of the budget, not at the budget: what is in flight, the drain, the
last recordings and the reports still go into the run directory. The faults not yet played are skipped; the
checker reports the run as cut short, its later periods unknown (history BUDGET_REACHED).
"""

from __future__ import annotations

from typing import Callable

from harness.evidence.history import BUDGET, BUDGET_REACHED, History
from harness.evidence.layout import RunLayout
from harness.process.usage import entries_bytes
from harness.runner.periodic import PeriodicSampler

MARK = 0.9


def evidence_bytes(layout: RunLayout) -> int:
    """Disk the run directory's evidence takes: every entry of it but the brokers' data."""
    return sum(size for name, size in entries_bytes(layout.root).items() if name != layout.cluster.name)


class EvidenceBudget(PeriodicSampler):
    """Measures the evidence every `interval_s`; at MARK of `budget_bytes` (or where the growth since the last look
    would take it there before the next), records it and calls `end_workload` with the reason, once. `why`: that
    reason from then on (None before)."""

    def __init__(
        self,
        layout: RunLayout,
        budget_bytes: int,
        history: History,
        end_workload: Callable[[str], None],
        interval_s: float = 5.0,
    ):
        super().__init__("evidence-budget", interval_s)
        self.layout, self.budget_bytes, self.history, self.end_workload = layout, budget_bytes, history, end_workload
        self.why: str | None = None
        self._last = 0
        history.record(BUDGET, budget_bytes=budget_bytes)

    def sample(self) -> None:
        if self.why is not None:
            return
        size = evidence_bytes(self.layout)
        growth, self._last = max(0, size - self._last) if self._last else 0, size
        if size + growth >= MARK * self.budget_bytes:  # at the mark now, or before the next look
            self.history.record(BUDGET_REACHED, budget_bytes=self.budget_bytes, evidence_bytes=size)
            self.why = (
                f"the run's evidence reached {size / 1e6:,.1f} MB, {size / self.budget_bytes:.0%} of its budget "
                f"({self.budget_bytes / 1e6:,.1f} MB)"
                + ("" if size >= MARK * self.budget_bytes else f", and would pass {MARK:.0%} before the next look")
            )
            self.end_workload(self.why)
