"""The run's evidence budget (scenario `evidence.budget`, `--evidence-budget`): the run directory watched as the run
goes, and the workload ended early once its evidence reaches the budget's mark.

The evidence is everything in the run directory but what is not evidence (RunLayout.not_evidence: the embedded
brokers' data, which the topics' retention bounds, and the drivers' scratch, which Spark removes as a driver
stops). The workload ends once the evidence and what the backlog will add reach MARK of the budget: the records the
streamlets have not processed yet are still recorded and stored while the pipeline drains, as are the reports. The
faults not yet played are skipped; the checker reports the run as cut short, its later periods unknown (history
BUDGET_REACHED).

Two readers make the evidence grow with every record they read: the topic recorder (topics/) and the egresses (the
rest of it but the acknowledgement log, which is whole as soon as a record is sent). Each will add its bytes per
record read so far for each record still to reach it: its own lag, and the lag of every streamlet upstream of what
it reads. (Per acknowledged record instead, a pipeline half behind counted half its cost per record: a loaded run
stopped at 37 MB expecting 19 MB more and ended at 69 MB of 60.) A reader that has read nothing yet (an egress whose
query has not started on a loaded machine) is taken to cost what the other costs a record: counted as nothing, a
run ended at 99 MB of 60, the egress storing every record after the workload had stopped. A reader's cost a record
is the highest seen so far: on a loaded machine its last records may not be on disk yet when it is measured.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from harness.evidence.history import BUDGET, BUDGET_REACHED, History
from harness.evidence.layout import RunLayout
from harness.process.usage import entries_bytes
from harness.runner.periodic import PeriodicSampler

MARK = 0.9


def evidence_entries(layout: RunLayout) -> dict[str, int]:
    """Disk each top-level entry of the run directory's evidence takes (all but those that are not evidence)."""
    return {name: size for name, size in entries_bytes(layout.root).items() if name not in layout.not_evidence}


@dataclass(frozen=True)
class Reader:
    """Records a reader of the pipeline's records has read so far, and those still to reach it."""

    read: int
    to_read: int

    def cost(self, evidence: int) -> float | None:
        """Bytes of its `evidence` per record it read (None: it has read nothing yet)."""
        return evidence / self.read if self.read > 0 else None

    def bytes_to_come(self, cost: float | None) -> int:
        """What it will add at `cost` bytes a record (None: nothing to go by)."""
        return int(cost * self.to_read) if cost is not None else 0


@dataclass(frozen=True)
class Backlog:
    """The records still to reach the topic recorder and the egresses."""

    recorder: Reader
    egresses: Reader

    def costs(self, recordings: int, egress_evidence: int) -> tuple[float | None, float | None]:
        """Bytes a record of the recordings (topics/) and of the egresses' evidence (the rest of the evidence but
        the acknowledgement log) so far (None: that reader has read nothing yet)."""
        return self.recorder.cost(recordings), self.egresses.cost(egress_evidence)

    def bytes_at(self, recorder: float | None, egresses: float | None) -> int:
        """What the drain will add at these costs a record; a reader that has read nothing yet at the other's."""
        return self.recorder.bytes_to_come(recorder if recorder is not None else egresses) + (
            self.egresses.bytes_to_come(egresses if egresses is not None else recorder)
        )

    def bytes_to_come(self, recordings: int, egress_evidence: int) -> int:
        """What the drain will add to the recordings and to the egresses' evidence, at their costs so far."""
        return self.bytes_at(*self.costs(recordings, egress_evidence))


def upstream_lags(flows: dict[str, tuple[list[str], list[str]]], lags: dict[str, int]) -> dict[str, int]:
    """Per streamlet (`flows`: its input and output topics, in pipeline order): the records not through it yet, its
    own lag and that of every streamlet writing what it reads, and theirs (a record of two paths counts twice: an
    estimate from above)."""
    writers: dict[str, list[str]] = {}
    for name, (_, outputs) in flows.items():
        for topic in outputs:
            writers.setdefault(topic, []).append(name)
    behind: dict[str, int] = {}
    for name, (inputs, _) in flows.items():
        behind[name] = lags[name] + sum(behind.get(w, 0) for t in inputs for w in writers.get(t, ()))
    return behind


def pipeline_backlog(
    flows: dict[str, tuple[list[str], list[str]]],
    lags: dict[str, int | None],
    ends: dict[tuple[str, int], int],
    recorded: tuple[list[str], int, int],
) -> Backlog:
    """The backlog of a pipeline: `flows` per streamlet its input and output topics (pipeline order), `lags` the
    records of its inputs it has not processed (None: its query has not started: all of them), `ends` the topics'
    log ends, `recorded` the recorder's topics, records recorded and lag. The egresses are the streamlets that
    write no topic."""
    inputs_total = {name: sum(e for (t, _), e in ends.items() if t in flow[0]) for name, flow in flows.items()}
    lag = {name: inputs_total[name] if lags.get(name) is None else lags[name] for name in flows}
    behind = upstream_lags(flows, lag)
    topics, records, recorder_lag = recorded
    writers = [name for name, (_, outputs) in flows.items() if set(outputs) & set(topics)]
    egresses = [name for name, (_, outputs) in flows.items() if not outputs]
    return Backlog(
        Reader(records, recorder_lag + sum(behind[w] for w in writers)),
        Reader(sum(inputs_total[e] - lag[e] for e in egresses), sum(behind[e] for e in egresses)),
    )


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
        self._costs: tuple[float | None, float | None] = (None, None)  # the highest seen a record, per reader
        history.record(BUDGET, budget_bytes=budget_bytes)

    def sample(self) -> None:
        if self.why is not None:
            return
        entries = evidence_entries(self.layout)
        size = sum(entries.values())
        recordings, sent = entries.get(self.layout.topics.name, 0), entries.get(self.layout.written_ack_log.name, 0)
        backlog = self.backlog()
        # A reader's last records may not be on disk yet when it is measured (a loaded machine writes late): a
        # record costs at least what one cost before, so the highest cost seen stands for it (a run estimating
        # at a dipped cost ended at 64 MB of 60).
        now = backlog.costs(recordings, size - recordings - sent)
        self._costs = tuple(max((c for c in pair if c is not None), default=None) for pair in zip(self._costs, now))
        to_come = backlog.bytes_at(*self._costs)
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
