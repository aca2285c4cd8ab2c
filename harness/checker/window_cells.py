"""Window counts judged, cell by cell: the rule harness/checker/windows.py states, in arrays of (key, window) cells,
so that the whole table in memory (numpy) and a block of cells at a time (the dense engine) judge them alike.

A cell's tallies: acknowledged records (A), records of unknown outcome (U), acknowledged records the counter dropped
behind its watermark (D), the count the egress's state holds (C, where `stored`) and its deliveries to the egress.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

COLUMNS = ("acked", "unknown", "dropped", "count", "deliveries", "missing", "over", "phantom", "watermark")


@dataclass
class CellTotals:
    """What the cells judged add up to (a block's, or the sum of blocks'): WindowCounts' counts of the egress's side,
    and the windows delivered more than once."""

    windows: int = 0
    still_open: int = 0
    exact: int = 0
    under_counted: int = 0
    over_counted: int = 0
    phantom: int = 0
    records_missing: int = 0
    records_dropped_by_watermark: int = 0
    records_over_counted: int = 0
    duplicated_deliveries: int = 0

    def add(self, other: CellTotals) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


@dataclass(frozen=True)
class Judged:
    """Cells judged: the totals, which cells are judged (not still open), and per judged cell its columns (COLUMNS:
    the tallies, filled with 0 where absent, and what was found)."""

    totals: CellTotals
    judged: np.ndarray  # bool per cell given
    columns: dict[str, np.ndarray]  # per judged cell

    @property
    def anomalous(self) -> np.ndarray:
        """Per judged cell: any witness class (under-counted beyond the watermark, over-counted, phantom)."""
        c = self.columns
        return (c["missing"] > c["watermark"]) | (c["over"] > 0) | c["phantom"]


def judge(
    acked: np.ndarray,
    unknown: np.ndarray,
    dropped: np.ndarray,
    count: np.ndarray,
    stored: np.ndarray,
    deliveries: np.ndarray,
    start_ms: np.ndarray,
    size_ms: int,
    final_watermark_ms: int,
) -> Judged:
    """Cells that exist (a record sent for them, a count stored or a delivery), each array one value per cell (`count`
    read only where `stored`)."""
    sent = (acked + unknown) > 0
    phantom = ~sent & stored
    # Append mode emits a window once the watermark passes its end: windows still open when the run
    # stopped were never due at the egress and are not judged.
    still_open = ~stored & (start_ms + size_ms > final_watermark_ms)
    keep = ~still_open
    a, u, d = (np.asarray(v, np.int64)[keep] for v in (acked, unknown, dropped))
    c = np.where(stored, count, 0).astype(np.int64)[keep]
    phantom, deliveries = phantom[keep], np.asarray(deliveries, np.int64)[keep]
    missing = np.maximum(a - c, 0)
    over = np.maximum(c - a - u, 0)
    explained = np.minimum(d, missing)
    totals = CellTotals(
        windows=int(np.count_nonzero(a + c > 0)),
        still_open=int(np.count_nonzero(still_open)),
        exact=int(np.count_nonzero((missing == explained) & (over == 0) & ~phantom)),
        under_counted=int(np.count_nonzero(missing > explained)),
        over_counted=int(np.count_nonzero(over > 0)),
        phantom=int(np.count_nonzero(phantom)),
        records_missing=int(missing.sum()),
        records_dropped_by_watermark=int(explained.sum()),
        records_over_counted=int(over.sum()),
        duplicated_deliveries=int(np.count_nonzero(deliveries > 1)),
    )
    columns = dict(zip(COLUMNS, (a, u, d, c, deliveries, missing, over, phantom, explained)))
    return Judged(totals, keep, columns)
