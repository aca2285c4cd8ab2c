"""What the checker's steps find, as typed, plain data the Report (harness/checker/run_report.py) carries and
every report format is written from."""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.checker.reconcile import Counts


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
