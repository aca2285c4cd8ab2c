"""The run's periods: its records judged by when they were sent, counts and a verdict each (the trend of a long run).

A sent record's period is the one its event time falls in (the generator's send time; a late event's is set back,
and one set back before the first period counts in the first); a phantom's, the one it first reached an egress in
(the last for one arriving after the last record was sent). A record whose time is unknown (a damaged ack line, a
phantom's arrival not recorded) is in no period: `unplaced`. The periods' counts and the unplaced sum to the run's
end-to-end counts; each period's verdict is the run's rule over its own counts. The length comes from the run's
planned span (or its records', if longer). Of a run that did not finish, a period with records undelivered is
unknown, and every verdict is provisional: a replay still to come may copy any period's records. Of a run whose
evidence budget ended its workload early, the periods it did not run are unknown, their counts unmeasured. A pipeline
judged by its window counts has no periods.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from contract.roles import EGRESS
from harness.checker.counts import COUNTS, WINDOWS
from harness.checker.findings import Period, Periods
from harness.checker.hops import HOPS, TALLIES
from harness.checker.intermediate import Sendings
from harness.checker.reconcile import Counts, verdict
from harness.checker.rid_sets import Positions, first_occurrences, isin
from harness.checker.step import Context, Key, Step
from harness.checker.unfinished import EGRESS_RESULT, LOST, LOST_KNOWN, UNDELIVERED
from harness.evidence.history import BUDGET_REACHED

LENGTHS_S = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 28800, 86400)
MOST_PERIODS = 24  # the shortest length of LENGTHS_S that makes at most this many
SOAK_PERIOD_S = 60  # a run long enough for periods of a minute or more (12 minutes): its trend is shown as it goes
# None: not cut so (no egress, judged by windows, no time known)
PERIODS: Key[Periods | None] = Key("periods", reported=True)


def period_length_s(span_ms: int) -> int:
    """The period length for records sent over `span_ms`: the shortest of LENGTHS_S giving at most MOST_PERIODS."""
    return next((s for s in LENGTHS_S if span_ms < s * 1000 * MOST_PERIODS), LENGTHS_S[-1])


def sendings(sent: pd.DataFrame, planned_ms: int) -> Sendings | None:
    """The acknowledgement log's records tallied by period of sending (None: no record's time is known);
    `planned_ms`: how long the workload was planned to send (0: not known)."""
    event_ms = sent.event_time_ms.to_numpy(dtype=np.int64)
    timed = event_ms > 0  # a damaged or cut ack line's time is unknown: its record is in no period
    on_time = timed & ~sent.late.to_numpy(dtype=bool)
    if not timed.any():
        return None
    start_ms, end_ms = int(event_ms[on_time if on_time.any() else timed].min()), int(event_ms[timed].max())
    # cut by the run's planned length, so that a run still going (or ended early) has the periods it will have had
    length_ms = period_length_s(max(end_ms - start_ms, planned_ms)) * 1000
    period, slots = slot_of(event_ms, start_ms, end_ms, length_ms), (end_ms - start_ms) // length_ms + 2
    acked = sent.acked.to_numpy(dtype=bool)
    counted = (np.bincount(period[acked], minlength=slots), np.bincount(period[~acked], minlength=slots))
    return Sendings(start_ms, end_ms, length_ms, *counted)


def slot_of(event_ms: np.ndarray, start_ms: int, end_ms: int, length_ms: int) -> np.ndarray:
    """Each event time's period of the grid from `start_ms` to `end_ms`; after the last period's slot, the slot of
    those not known (<= 0)."""
    last = (end_ms - start_ms) // length_ms
    return np.where(event_ms > 0, np.clip((event_ms - start_ms) // length_ms, 0, last), last + 1)


def _periods(context: Context) -> dict:
    return {PERIODS: _cut(context)}


def _cut(context: Context) -> Periods | None:
    result, sent = context[EGRESS_RESULT], context.evidence.sent
    if result is None or context[WINDOWS] is not None:
        return None
    planned_ms = planned_span_ms(context.evidence.resolved)
    tallied = context[TALLIES].sendings
    if tallied is None:
        return None
    start_ms, length_ms, n = tallied.start_ms, tallied.length_ms, len(tallied.acked) - 1
    # slot n: the records in no period
    period = slot_of(sent.event_time_ms.to_numpy(dtype=np.int64), start_ms, tallied.end_ms, length_ms)
    where = Positions(sent.rid.to_numpy())  # sent: one row per record

    def per_period(rids) -> np.ndarray:
        """How many of the sent records `rids` each period (and slot n) holds."""
        at = where.of(rids)
        return np.bincount(period[at[at >= 0]], minlength=n + 1)

    known = context[LOST_KNOWN]  # which missing records are lost, and which undelivered (harness/checker/unfinished.py)
    counted = {
        "acked": tallied.acked,
        "unknown": tallied.unknown,
        "lost": per_period(context[LOST]) if known else None,
        "duplicated_deliveries": per_period(result.duplicated_deliveries.index.to_numpy()),
        "duplicated_in_state": per_period(result.duplicated_in_state.index.to_numpy()),
        "phantom": _phantoms(context, result.phantom, start_ms, length_ms, n),
        "reordered": per_period(result.reordered.rid.to_numpy()),
        "dropped": per_period(result.dropped),
        "undelivered": per_period(context[UNDELIVERED]) if known else None,
    }
    slots = [Counts(**{k: None if v is None else int(v[i]) for k, v in counted.items()}) for i in range(n + 1)]
    found = [
        # a period is judged when every record of it is accounted for: delivered, or proven lost
        Period(start_ms + i * length_ms, counts, verdict(counts) if counts.undelivered == 0 else "unknown")
        for i, counts in enumerate(slots[:n])
    ]
    if any(e["event"] == BUDGET_REACHED for e in context.evidence.history):  # the periods it did not run: unknown
        not_run = range(n, -(-planned_ms // length_ms))
        found += [Period(start_ms + i * length_ms, Counts.unmeasured(0, 0), "unknown") for i in not_run]
    return Periods(length_ms // 1000, found, slots[n], provisional=bool(context.unfinished))


def planned_span_ms(resolved: dict) -> int:
    """How long the run's workload was planned to send (0: not known)."""
    planned = resolved.get("duration_s")
    return int(planned * 1000) if isinstance(planned, (int, float)) and planned > 0 else 0


def _phantoms(context: Context, phantom: np.ndarray, start_ms: int, length_ms: int, n: int) -> np.ndarray:
    """Phantoms per period by their first arrival at an egress; slot n: those whose arrival was not recorded."""
    placed = np.zeros(n + 1, np.int64)
    arrivals = [
        hop.rows[isin(hop.rows.rid.to_numpy(), phantom)][["rid", "time_ms"]]
        for hop in context[HOPS]
        if hop.kind == EGRESS and "time_ms" in hop.rows.columns
    ]
    if not len(phantom) or not arrivals:
        placed[n] = len(phantom)
        return placed
    rows = pd.concat(arrivals).sort_values("time_ms", kind="stable")
    first = rows[first_occurrences(rows.rid.to_numpy())]
    at = (first.time_ms.to_numpy(dtype=np.float64) - start_ms) // length_ms
    known = ~np.isnan(at)
    np.add.at(placed, np.clip(at[known], 0, n - 1).astype(np.int64), 1)
    placed[n] = len(phantom) - int(known.sum())
    return placed


STEP = Step(
    "periods",
    _periods,
    writes=(PERIODS,),
    needs=(HOPS, TALLIES, COUNTS, WINDOWS),
    uses=(EGRESS_RESULT, LOST, LOST_KNOWN, UNDELIVERED),
)
