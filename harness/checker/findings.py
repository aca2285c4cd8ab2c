"""What the checker found: typed, plain data that every report format is written from.

`Report.to_dict()` is report.json; its schema is documented in docs/checker.md
and versioned by SCHEMA_VERSION (bumped only when a field changes meaning or
disappears).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

from harness.checker.declared import FaultMiss
from harness.checker.expectations.result import PASS, UNKNOWN, ExpectationResult, merge
from harness.checker.reconcile import Counts
from harness.checker.section import Section

# 2: counts may be null, expectations[].status, outcome, unfinished, copies; 3: counts.undelivered (an unfinished
# run's lost is only what is proven), doubts, skipped_faults; 4: faults[].number and declared, fault_misses, and a
# skipped fault no longer judged as usual (docs/checker.md); 5: sections, one per check of harness/checker/checks/
SCHEMA_VERSION = 5


@dataclass(frozen=True)
class HopCopies:
    """Copy counts of the sent records at one hop."""

    copies: int  # every copy of a sent record
    extra: int  # copies - distinct records
    made_here: int  # extra copies this hop's producer made (a batch that ran again)
    inherited: int  # extra copies that arrived from upstream (at a hop reading the source: aborted copies read there)
    extra_in_state: int | None = None  # egress: extra copies its final state kept
    absorbed: int | None = None  # egress: re-delivered copies its final state did not keep


@dataclass(frozen=True)
class ProcessMemory:
    name: str
    pid: int  # the last one seen (a restarted driver has a new pid)
    first_mb: float
    # median of the first window once warm, what growth is measured from (None: never warm long enough)
    warm_mb: float | None
    last_mb: float  # the last sample
    end_mb: float | None  # median of the last window (None: never warm long enough)
    max_mb: float
    growth: float | None  # (end - warm) / warm over the warm part of the last pid's life


@dataclass(frozen=True)
class ResourceUse:
    samples: int
    duration_s: float  # first sample -> last sample
    warmup_s: float
    processes: list[ProcessMemory]
    disk_first_mb: float
    disk_last_mb: float
    disk_max_mb: float
    disk_last_by_folder: dict = field(default_factory=dict)  # folder -> MB at the last sample
    # for the plot: t_s (from the workload's start), disk_mb, rss_mb per process (None: not running)
    series: dict = field(default_factory=dict)
    evidence_max_bytes: int | None = None  # the run directory but the brokers' data (cluster/), at most
    evidence_budget_bytes: int | None = None  # the run's evidence budget (None: it had none)

    @property
    def max_growth(self) -> float | None:
        """The largest growth of any process measured after warm-up (None when none was measured)."""
        measured = [p.growth for p in self.processes if p.growth is not None]
        return max(measured) if measured else None


@dataclass(frozen=True)
class Copy:
    """One place a record was seen: a topic (partition, offset) or the egress (batch id, arrival)."""

    hop: str
    partition: int | None
    offset: int | None
    batches: dict  # streamlet -> batch id that carried this copy
    received_ms: int | None = None  # when the broker (a topic's timestamp) or the egress received it
    fault: int | None = (
        None  # the number of the fault whose replay made this copy (None: an original or inherited copy)
    )


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
    copies: HopCopies | None = None  # copy-level counts: extra copies made here, inherited, kept and absorbed
    headers_lost: int | None = (
        None  # a topic: copies of sent records without the source's header (None: not looked for)
    )


@dataclass(frozen=True)
class FaultResult:
    kind: str
    target: str
    start_ms: int
    end_ms: int | None
    params: dict
    recovery_s: float | None  # fault -> first batch with input after the restart (None: not measured; see note)
    redelivered: int  # extra copies this fault's replays made, at every hop
    note: str = ""
    recovers: bool = True  # a recovery time applies (something restarted or came back); False for whole-run faults
    restarted: bool | None = (
        None  # restarting faults: did the target come back (None: not a restarting fault, or unknown)
    )
    redelivered_at: dict = field(default_factory=dict)  # hop -> extra copies this fault's replays made there
    # fault -> the first record an egress received after the target restarted (or the fault ended); None: none
    # came, or the fault has no end. What a user of the output sees, where recovery_s is what the job reports.
    output_s: float | None = None
    number: int = 0  # its number among the run's faults: the console's, the witnesses' and the CSVs'
    declared: str = ""  # "": it struck as declared; else how it did not, and why (harness/checker/declared.py)


@dataclass(frozen=True)
class Latency:
    """Seconds from a record's event time to its first arrival at the egress (on-time records)."""

    records: int
    p50_s: float | None
    p90_s: float | None
    p99_s: float | None
    max_s: float | None
    restart_share: float | None  # share of all that time spent while a fault's target was down (fault -> recovered)


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
    spark_rows_dropped_by_watermark: int | None = None  # Spark's numRowsDroppedByWatermark, summed (None: no progress)


@dataclass(frozen=True)
class Period:
    """The records sent in one period of the run (harness/checker/periods.py): their end-to-end counts and verdict."""

    start_ms: int
    counts: Counts
    verdict: str  # unknown where some of its records are undelivered (a run that did not finish)


@dataclass(frozen=True)
class Periods:
    """The run cut into periods of equal length by when its records were sent: the trend of a long run."""

    length_s: int
    periods: list[Period]
    unplaced: Counts  # records in no period: a sent record's time unknown (a damaged line), a phantom's arrival
    provisional: bool  # the run did not finish: a replay still to come may copy any period's records


@dataclass
class Report:
    run_dir: str
    scenario: str
    description: str
    status: str  # how the run ended: complete | interrupted | failed | unknown
    verdict: str
    counts: Counts
    hops: list[Hop]
    causes: (
        dict  # lost: {retention, redeploy, topic_recreated, watermark, query_failed, unexplained}; duplicated: {...}
    )
    retention: list[dict]  # per retention fault: window size, lost in it, reached downstream, exact
    faults: list[FaultResult]
    latency: Latency
    expectations: list[ExpectationResult]
    witnesses: list[Witness]
    query_failures: list[dict]
    windows: WindowCounts | None
    timeline: dict  # series for the plots: throughput, lag, anomalies over time and per partition
    gaps: list[str] = field(default_factory=list)  # evidence missing or unreadable: the report is partial

    unfinished: str = ""  # why the run is not a finished one (in progress, cut short), or ""
    # what makes the outcome unknown whatever the counts (a fault half done)
    doubts: list[str] = field(default_factory=list)
    skipped_faults: list[dict] = field(default_factory=list)  # faults that did nothing: kind, target, fault, reason
    # faults that did not strike as declared (skipped, moment missed, late, not played): the outcome is not a pass
    fault_misses: list[FaultMiss] = field(default_factory=list)
    run_info: dict = field(default_factory=dict)  # seed, duration_s, faults planned and played, versions
    witness_totals: dict = field(default_factory=dict)  # anomaly class -> records in it (witnesses show a few)
    resources: ResourceUse | None = None  # memory and disk over the run (None: no samples)
    periods: Periods | None = None  # the trend: counts and a verdict per period of sending (None: not cut so)
    sections: dict[str, Section] = field(default_factory=dict)  # each check's of harness/checker/checks/, by name
    # anomaly -> complete set (DataFrame); saved as files, not in JSON
    records: dict = field(default_factory=dict, repr=False)

    @property
    def outcome(self) -> str:
        """pass | fail | unknown: the expectations merged; unknown too when the verdict itself is unknown,
        the run did not finish (missing deliveries of a run in progress are not losses) or has doubts."""
        merged = merge(e.status for e in self.expectations)
        if merged == PASS and (self.verdict == "unknown" or self.unfinished or self.doubts or self.fault_misses):
            return UNKNOWN
        return merged

    @property
    def passed(self) -> bool:
        return self.outcome == PASS

    def to_dict(self) -> dict:
        data = asdict(replace(self, records={}))
        del data["records"]
        data["schema_version"] = SCHEMA_VERSION
        data["verdict"] = {"end_to_end": self.verdict, "hops": {h.name: h.verdict for h in self.hops}}
        data["outcome"] = self.outcome
        data["passed"] = self.passed
        data["partial"] = bool(self.gaps or self.unfinished or self.doubts or self.fault_misses)
        for result, expectation in zip(data["expectations"], self.expectations):
            result["passed"] = expectation.passed
        for section in data["sections"].values():
            if not section["data"]:
                del section["data"]
        return data
