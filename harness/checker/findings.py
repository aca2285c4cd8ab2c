"""What the checker found: typed, plain data that every report format is written from.

`Report.to_dict()` is report.json; its schema is documented in docs/checker.md
and versioned by SCHEMA_VERSION (bumped only when a field changes meaning or
disappears).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from harness.checker.reconcile import Counts

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Copy:
    """One place a record was seen: a topic (partition, offset) or the egress (batch id, arrival)."""

    hop: str
    partition: int | None
    offset: int | None
    batches: dict  # streamlet -> batch id that carried this copy
    received_ms: int | None = None


@dataclass(frozen=True)
class Witness:
    anomaly: str  # lost | duplicated_deliveries | duplicated_in_state | phantom | reordered | window_*
    key: str
    seq: int | None
    source_partition: int | None
    source_offset: int | None
    copies: tuple[Copy, ...]
    first_hop: str | None
    cause: str | None
    note: str = ""


@dataclass(frozen=True)
class Hop:
    """The reconciliation of one intermediate topic or the egress against the acknowledged records."""

    name: str
    kind: str  # topic | egress
    verdict: str
    counts: Counts
    first_seen: dict  # anomaly -> records whose anomaly first appears at this hop


@dataclass(frozen=True)
class FaultResult:
    kind: str
    target: str
    start_ms: int
    end_ms: int | None
    params: dict
    recovery_s: float | None  # fault -> first batch with input after the restart (None: no restart or no input)
    redelivered: int  # records delivered again because of this fault (first hop where the copy appeared)
    note: str = ""


@dataclass(frozen=True)
class Latency:
    records: int
    p50_ms: float | None
    p90_ms: float | None
    p99_ms: float | None
    max_ms: float | None


@dataclass(frozen=True)
class ExpectationResult:
    name: str  # e.g. end_to_end, per_hop.processed, max_lost
    expected: object
    actual: object
    passed: bool
    detail: str


@dataclass(frozen=True)
class WindowCounts:
    """Stateful pipelines: counts per (key, window) at the egress against the acknowledged records."""

    windows: int
    still_open: int  # not yet emitted when the run stopped (the watermark had not passed their end)
    exact: int
    under_counted: int
    over_counted: int
    phantom: int
    records_missing: int
    records_dropped_by_watermark: int
    records_over_counted: int


@dataclass
class Report:
    run_dir: str
    scenario: str
    description: str
    status: str  # how the run ended: complete | interrupted | failed | unknown
    verdict: str
    counts: Counts
    hops: list[Hop]
    causes: dict  # lost: {retention, watermark, redeploy, query_failed, unexplained}; duplicated: {...}
    retention: list[dict]  # per retention fault: window size, lost in it, reached downstream, exact
    faults: list[FaultResult]
    latency: Latency
    expectations: list[ExpectationResult]
    witnesses: list[Witness]
    query_failures: list[dict]
    windows: WindowCounts | None
    timeline: dict  # series for the plots: throughput, lag, anomalies over time and per partition
    gaps: list[str] = field(default_factory=list)  # evidence missing or unreadable: the report is partial

    @property
    def passed(self) -> bool:
        return all(e.passed for e in self.expectations)

    def to_dict(self) -> dict:
        data = asdict(self)
        data["schema_version"] = SCHEMA_VERSION
        data["verdict"] = {"end_to_end": self.verdict, "hops": {h.name: h.verdict for h in self.hops}}
        data["passed"] = self.passed
        data["partial"] = bool(self.gaps)
        return data
