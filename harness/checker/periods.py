"""The run's periods: its records judged by when they were sent, counts and a verdict each (the trend of a long run).

A sent record's period is the one its event time falls in (the generator's send time; a late event's is set back,
and one set back before the first period counts in the first); a phantom's, the one it first reached an egress in
(the last for one arriving after the last record was sent; unplaced when its arrival was not recorded). The
periods' counts sum to the run's end-to-end counts (phantoms: with the unplaced ones); each period's verdict is
the run's rule over its own counts. Of a run that did not finish, a period with records undelivered is unknown,
and every verdict is provisional: a replay still to come may copy any period's records. A pipeline judged by its
window counts has no periods.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from contract.roles import EGRESS
from harness.checker.findings import Period, Periods
from harness.checker.reconcile import Counts, verdict
from harness.checker.rid_sets import Positions, first_occurrences, isin
from harness.checker.step import Context, Step

LENGTHS_S = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 28800, 86400)
MOST_PERIODS = 24  # the shortest length of LENGTHS_S that makes at most this many


def period_length_s(span_ms: int) -> int:
    """The period length for records sent over `span_ms`: the shortest of LENGTHS_S giving at most MOST_PERIODS."""
    return next((s for s in LENGTHS_S if span_ms < s * 1000 * MOST_PERIODS), LENGTHS_S[-1])


def _periods(context: Context) -> None:
    result, sent = context.egress_result, context.evidence.sent
    context.periods = None
    if result is None or context.windows is not None or sent.empty:
        return
    event_ms = sent.event_time_ms.to_numpy(dtype=np.int64)
    on_time = event_ms[~sent.late.to_numpy(dtype=bool)] if (~sent.late).any() else event_ms
    start_ms, end_ms = int(on_time.min()), int(event_ms.max())
    length_ms = period_length_s(end_ms - start_ms) * 1000
    n = (end_ms - start_ms) // length_ms + 1
    period = np.clip((event_ms - start_ms) // length_ms, 0, n - 1)
    acked = sent.acked.to_numpy(dtype=bool)
    where = Positions(sent.rid.to_numpy())  # sent: one row per record

    def per_period(rids) -> np.ndarray:
        """How many of the sent records `rids` each period holds."""
        at = where.of(rids)
        return np.bincount(period[at[at >= 0]], minlength=n)

    unfinished = bool(context.unfinished)
    known = not unfinished or context.lost_known  # which missing records are lost, and which undelivered
    none = np.zeros(n, np.int64)
    phantom, unplaced = _phantoms(context, result.phantom, start_ms, length_ms, n)
    counted = {
        "acked": np.bincount(period[acked], minlength=n),
        "unknown": np.bincount(period[~acked], minlength=n),
        "lost": per_period(context.lost if unfinished else result.lost) if known else None,
        "duplicated_deliveries": per_period(result.duplicated_deliveries.index.to_numpy()),
        "duplicated_in_state": per_period(result.duplicated_in_state.index.to_numpy()),
        "phantom": phantom,
        "reordered": per_period(result.reordered.rid.to_numpy()),
        "dropped": per_period(result.dropped),
        "undelivered": (per_period(context.undelivered) if unfinished else none) if known else None,
    }
    found = []
    for i in range(n):
        counts = Counts(**{name: None if values is None else int(values[i]) for name, values in counted.items()})
        whole = counts.undelivered == 0  # every record of it accounted for: delivered, or proven lost
        found.append(Period(start_ms + i * length_ms, counts, verdict(counts) if whole else "unknown"))
    context.periods = Periods(length_ms // 1000, found, unplaced, provisional=unfinished)


def _phantoms(context: Context, phantom: np.ndarray, start_ms: int, length_ms: int, n: int) -> tuple[np.ndarray, int]:
    """Phantoms per period by their first arrival at an egress, and how many have no arrival time recorded."""
    placed = np.zeros(n, np.int64)
    if not len(phantom):
        return placed, 0
    arrivals = []
    for hop in context.hops:
        if hop.kind == EGRESS and "time_ms" in hop.rows.columns:
            rows = hop.rows[isin(hop.rows.rid.to_numpy(), phantom)]
            arrivals.append(rows[["rid", "time_ms"]])
    if not arrivals:
        return placed, len(phantom)
    rows = pd.concat(arrivals).sort_values("time_ms", kind="stable")
    first = rows[first_occurrences(rows.rid.to_numpy())]
    at = (first.time_ms.to_numpy(dtype=np.float64) - start_ms) // length_ms
    known = ~np.isnan(at)
    np.add.at(placed, np.clip(at[known], 0, n - 1).astype(np.int64), 1)
    return placed, len(phantom) - int(known.sum())


def _periods_unknown(context: Context) -> None:
    context.periods = None


STEP = Step("periods", _periods, _periods_unknown, needs=("reconcile", "counts"))
