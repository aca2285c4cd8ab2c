"""The witnesses step: a few witnesses per anomaly class (harness/checker/witnesses.py), with the windows' of a
stateful pipeline, the complete record sets, and how many records each class has."""

from __future__ import annotations

import numpy as np
import pandas as pd

from harness.checker.copies import ACCOUNTING
from harness.checker.counts import COUNTS, WINDOW_WITNESS_TOTALS, WINDOW_WITNESSES
from harness.checker.fault_results import FAULTS
from harness.checker.findings import Witness
from harness.checker.hops import DUPLICATED, DUPLICATED_FIRST, HOPS
from harness.checker.step import Context, Key, Step
from harness.checker.unfinished import CAUSE_OF_LOST, EGRESS_RESULT, LOST, LOST_FIRST
from harness.checker.witnesses import AnomalyClass, record_sets, replay_cause, witnesses

WITNESSES: Key[list[Witness]] = Key("witnesses", list, reported=True)
# anomaly class -> records in it (witnesses show a few)
WITNESS_TOTALS: Key[dict] = Key("witness_totals", dict, reported=True)
RECORDS: Key[dict] = Key("records", dict)  # anomaly -> its complete set (a DataFrame): saved as files, not in JSON


def _witnesses(context: Context) -> dict:
    """A few witnesses per anomaly class, the complete sets, and how many records each class has."""
    lost, lost_first, cause_of_lost = context[LOST], context[LOST_FIRST], context[CAUSE_OF_LOST]
    egress_result, accounting, faults = context[EGRESS_RESULT], context[ACCOUNTING], context[FAULTS]
    duplicated, duplicated_first, hops = context[DUPLICATED], context[DUPLICATED_FIRST], context[HOPS]
    lost_index = pd.Series(np.arange(len(lost)), index=lost)
    dup_index = pd.Series(np.arange(len(duplicated)), index=duplicated)
    made = accounting.made.drop_duplicates("rid").set_index("rid")
    numbers = [f.number for f in faults]  # by the fault's place in the accounting (the spans' order)

    def explain_lost(rid):
        i = lost_index[rid]
        return int(lost_first[i]), str(cause_of_lost[i])

    def explain_duplicate(rid):
        if rid not in dup_index.index:
            return None, None
        if rid in made.index:
            cause = replay_cause(made, rid, faults)
        else:  # its copies came from the source: the same cause anomalies/duplicated.csv gives it
            cause = str(source_cause(np.array([rid], np.int64))[0])
        return int(duplicated_first[dup_index[rid]]), cause

    def source_cause(rids: np.ndarray) -> np.ndarray:
        """Copies the source itself held and a job passed on: its deliberate re-sends, those written again after a
        lost produce response, or aborted transactions."""
        sent = context.evidence.sent_at(rids, ["resent_copies", "retried_copies"])
        retried = np.where(sent.retried_copies.fillna(0).to_numpy() > 0, "retried_read", "aborted_read")
        return np.where(sent.resent_copies.fillna(0).to_numpy() > 0, "resent_read", retried)

    def duplicate_strata(rids: np.ndarray) -> np.ndarray:
        """The fault whose replay made the record's first extra copy, and the hop where it was made."""
        first = made.reindex(rids)
        return (first.fault.fillna(-2).astype(np.int64).astype(str) + "@" + first.hop.fillna("").astype(str)).to_numpy()

    lost_strata = np.char.add(np.asarray(lost_first, dtype=np.int64).astype(str), np.asarray(cause_of_lost, dtype=str))
    classes = [AnomalyClass("lost", lost, explain_lost, lost_strata if len(lost) else None)]
    if egress_result is not None:
        deliveries, in_state = egress_result.duplicated_deliveries, egress_result.duplicated_in_state
        delivered_twice, kept_twice = deliveries.index.to_numpy(), in_state.index.to_numpy()
        classes += [
            AnomalyClass(
                "duplicated_deliveries", delivered_twice, explain_duplicate, duplicate_strata(delivered_twice)
            ),
            AnomalyClass("duplicated_in_state", kept_twice, explain_duplicate, duplicate_strata(kept_twice)),
            AnomalyClass("phantom", egress_result.phantom, lambda rid: (None, None)),
            AnomalyClass("reordered", egress_result.reordered.rid.to_numpy(), lambda rid: (None, None)),
        ]

    def duplicated_origin(rids: np.ndarray) -> pd.DataFrame:
        """Per duplicated record: the hop where it first had two copies, the fault whose replay made its first extra
        copy (1-based; empty: none), and the cause: a replay after that fault, an unexplained one, or copies the
        source itself held (aborted transactions, the resend fault) passed on."""
        first = dup_index.reindex(rids)
        hop = [hops[int(duplicated_first[int(i)])].name if pd.notna(i) else None for i in first]
        origin = made.reindex(rids)
        fault = origin.fault.where(origin.fault >= 0).map(lambda i: numbers[int(i)], na_action="ignore")
        replayed = np.where(fault.notna(), "replay_after_fault", "unexplained")
        cause = np.where(origin.fault.notna().to_numpy(), replayed, source_cause(rids))
        return pd.DataFrame({"first_hop": hop, "fault": fault.astype("Int64").to_numpy(), "cause": cause})

    return {
        WITNESSES: witnesses(context.evidence, hops, classes, accounting, numbers) + context[WINDOW_WITNESSES],
        WITNESS_TOTALS: context[WINDOW_WITNESS_TOTALS] | {c.name: len(c.rids) for c in classes},
        RECORDS: record_sets(context.evidence, hops, lost, lost_first, cause_of_lost, egress_result, duplicated_origin),
    }


def _window_witnesses_only(context: Context) -> dict:
    return {WITNESS_TOTALS: context[WINDOW_WITNESS_TOTALS]}


STEP = Step(
    "witnesses",
    _witnesses,
    writes=(WITNESSES, WITNESS_TOTALS, RECORDS),
    needs=(COUNTS, WINDOW_WITNESSES, WINDOW_WITNESS_TOTALS, ACCOUNTING, FAULTS),
    uses=(LOST, LOST_FIRST, CAUSE_OF_LOST, EGRESS_RESULT, DUPLICATED, DUPLICATED_FIRST, HOPS),
    unknown=_window_witnesses_only,
)
