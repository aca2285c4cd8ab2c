"""What the check's steps hand each other on the way to the findings (harness/checker/findings.py): the faults'
time spans, each hop's rows, the accounting of extra copies. Data only, so that the steps and their Context
(harness/checker/step.py) import it and not each other."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.checker.findings import HopCopies
from harness.checker.window_cells import CellTotals


@dataclass(frozen=True)
class FaultSpan:
    kind: str
    target: str
    start_ms: int
    end_ms: int | None  # None: the run ended (or the harness died) before the fault did
    params: dict
    restart_ms: int | None  # when the target's new driver started (restarting faults)
    restarted: bool | None
    scope: str = "none"  # what it disturbs: "streamlet" (its target), "cluster" (every streamlet), "none"
    restarts: bool = False  # it stops its target's driver and starts it again
    recovers: bool = False  # a recovery time applies
    number: int = 0  # its number among the run's faults, as the console, the history and every report name it


@dataclass(frozen=True)
class HopData:
    name: str
    kind: str  # topic | egress
    producer: str  # the streamlet that wrote this hop (whose replay would duplicate here)
    rows: pd.DataFrame  # one row per copy, delivery order: rid, partition, offset, batch.<streamlet>..., time_ms
    stored: np.ndarray | None  # rids in the egress's final state (None for a topic: its rows are its state)
    batch_column: str  # the producer's batch id column
    upstream: str | None = None  # the hop the producer reads (None: it reads the source)
    ordered_by_partition: bool = False  # a key's order is judged per partition (an output keyed by its own key)
    topic: str | None = None  # the Kafka topic its rows' partitions and offsets are of (None: an egress's store)


@dataclass(frozen=True)
class Arrivals:
    """What the egresses' arrival times say, tallied so that an engine can count it where the records are: per
    whole number of milliseconds from a record's event time to its first arrival at the first egress (on-time
    records), how many took it and how long of it they waited while a fault's target was down; and per fault
    boundary (harness/checker/arrivals.py boundaries) the first arrival at any egress after it (None: none came, or
    the fault has none)."""

    latency_ms: np.ndarray  # distinct latencies (ms), ascending
    records: np.ndarray  # how many records took each
    waiting_ms: int  # of all their time, how much fell within a downtime
    first_after_ms: list[int | None]


@dataclass(frozen=True)
class Sendings:
    """The acknowledgement log tallied by when its records were sent (each by the line the loader keeps): the
    periods' grid (harness/checker/periods.py: from the first on-time event time known, else the first known, to
    the last, `length_ms` each) and per period how many records were acknowledged and how many are of unknown
    outcome, then a slot for those whose time is unknown."""

    start_ms: int
    end_ms: int
    length_ms: int
    acked: np.ndarray
    unknown: np.ndarray


@dataclass(frozen=True)
class SentCopies:
    """A hop's copies of the records sent: every copy, the records it has one or more of, (an egress) the copies
    its state kept beyond one of a record (None: a topic, whose copies all stay), and the copies without the header
    every source record carried (None: not looked for: no such header, or an egress, whose store keeps none)."""

    copies: int
    distinct: int
    kept: int | None
    headless: int | None = None


@dataclass(frozen=True)
class Tallies:
    """What an engine counts besides each hop's reconciliation, where the records are."""

    arrivals: Arrivals
    sendings: Sendings | None  # None: no record's time is known
    copies: list[SentCopies]  # per hop, in the hops' order
    # the records with anything to say (not ordinary, delivered out of order somewhere, or at risk in a retention
    # shrink's deleted range): rids
    notable: np.ndarray
    logged: np.ndarray  # each key's last record in the acknowledgement log (its highest ordinary seq): rids
    windows: WindowTally | None = None  # a windowed count's cells, where the engine judged them


@dataclass(frozen=True)
class WindowTally:
    """A windowed count's (key, window) cells judged where the records are (harness/checker/window_cells.py): their
    totals, the anomalous cells (key as text, window_start_ms, window_cells.COLUMNS), in any order, and the records
    sent, acknowledged and of unknown outcome."""

    totals: CellTotals
    anomalous: pd.DataFrame
    acked: int
    unknown: int


@dataclass(frozen=True)
class CopyAccounting:
    per_hop: dict[str, HopCopies]
    made: pd.DataFrame  # one row per extra copy made: rid, hop, row (in the hop's rows), streamlet, batch, time_ms,
    #                     fault (index into spans, -1: none), retried (its producer wrote it again: a lost response)

    def per_fault(self, n: int) -> np.ndarray:
        counts = np.zeros(n, dtype=np.int64)
        known = self.made.fault.to_numpy(dtype=np.int64)
        np.add.at(counts, known[known >= 0], 1)
        return counts

    def per_fault_and_hop(self, n: int) -> list[dict[str, int]]:
        found: list[dict[str, int]] = [{} for _ in range(n)]
        for (fault, hop), size in self.made[self.made.fault >= 0].groupby(["fault", "hop"], sort=False).size().items():
            found[int(fault)][hop] = int(size)
        return found
