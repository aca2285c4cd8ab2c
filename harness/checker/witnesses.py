"""Witnesses (a few concrete records per anomaly class, with every copy of each) and the complete record sets.

A witness names the record as the evidence wrote it (key, seq), where the source acknowledged it, every
copy at every hop (partition, offset, the batch stamps, when it was written or received, and the fault
whose replay made it), the hop where the anomaly first appears and its cause. The complete sets are
plain tables (one row per record) the report writer saves next to the report.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from contract.roles import EGRESS
from harness.checker.findings import Copy, FaultResult, Witness
from harness.checker.hops import copies_of
from harness.checker.intermediate import CopyAccounting, HopData
from harness.checker.load import Evidence
from harness.checker.reconcile import isin
from harness.checker.step import Context, Step

WITNESSES_PER_CLASS = 5


@dataclass(frozen=True)
class AnomalyClass:
    name: str  # lost | duplicated_deliveries | duplicated_in_state | phantom | reordered
    rids: np.ndarray
    explain: Callable[[int], tuple[int | None, str | None]]  # rid -> (first hop index, cause)


def _int(value):
    return None if value is None or (isinstance(value, float) and np.isnan(value)) else int(value)


def _copies(hops: list[HopData], rids: np.ndarray, accounting: CopyAccounting) -> dict[int, list[Copy]]:
    made = accounting.made[isin(accounting.made.rid.to_numpy(), rids) & (accounting.made.fault >= 0).to_numpy()]
    made_by = {
        (hop, int(row)): int(fault) + 1 for hop, row, fault in made[["hop", "row", "fault"]].itertuples(index=False)
    }
    found: dict[int, list[Copy]] = {int(r): [] for r in rids}
    for hop in hops:
        rows = copies_of(hop, rids)
        batch_columns = [c for c in rows.columns if c.startswith("batch.")]
        for index, row in zip(rows.index, rows.to_dict("records")):  # a handful of witnesses, not every record
            batches = {c[len("batch.") :]: int(row[c]) for c in batch_columns if row[c] >= 0}
            if hop.kind == EGRESS:
                batches[hop.producer] = int(row["batch_id"])
            found[int(row["rid"])].append(
                Copy(
                    hop.name,
                    _int(row.get("partition")),
                    _int(row.get("offset")),
                    batches,
                    _int(row.get("time_ms")),
                    made_by.get((hop.name, int(index))),
                )
            )
    return found


def witnesses(
    evidence: Evidence, hops: list[HopData], classes: list[AnomalyClass], accounting: CopyAccounting
) -> list[Witness]:
    chosen = {c.name: np.asarray(c.rids, dtype=np.int64)[:WITNESSES_PER_CLASS] for c in classes}
    every = np.unique(np.concatenate(list(chosen.values()) + [np.array([], np.int64)]))
    copies = _copies(hops, every, accounting)
    sent = evidence.sent[isin(evidence.sent.rid, every)].set_index("rid")  # only the witnesses' rows (one per record)
    found = []
    for anomaly in classes:
        for rid in chosen[anomaly.name].tolist():
            key, seq = evidence.ids.name(rid)
            source = sent.loc[rid] if rid in sent.index else None
            first_hop, cause = anomaly.explain(rid)
            found.append(
                Witness(
                    anomaly.name,
                    key,
                    seq,
                    _int(source.partition) if source is not None else None,
                    _int(source.offset) if source is not None and source.offset >= 0 else None,
                    tuple(copies.get(rid, [])),
                    hops[first_hop].name if first_hop is not None else None,
                    cause,
                )
            )
    return found


def window_witnesses(evidence: Evidence, egress: str, table: pd.DataFrame) -> tuple[list[Witness], dict[str, int]]:
    found, totals = [], {}
    for anomaly, rows in (
        ("window_under_counted", table[table.missing > table.watermark]),
        ("window_over_counted", table[table.over > 0]),
        ("window_phantom", table[table.phantom]),
    ):
        totals[anomaly] = len(rows)
        for row in rows.head(WITNESSES_PER_CLASS).itertuples(index=False):
            start = pd.Timestamp(int(row.window_start_ms), unit="ms").strftime("%Y-%m-%d %H:%M:%S")
            note = (
                f"window starting {start}: count {row.count}, acknowledged {row.acked} (+{row.unknown} unknown), "
                f"dropped behind the watermark {row.dropped}"
            )
            found.append(
                Witness(
                    anomaly,
                    str(evidence.keys[int(row.key)]) if 0 <= row.key < len(evidence.keys) else None,
                    None,
                    None,
                    None,
                    (),
                    egress,
                    None,
                    note,
                )
            )
    return found, totals


def replay_cause(made: pd.DataFrame, rid: int, faults: list[FaultResult]) -> str:
    """`made`: the first copy made of each record (CopyAccounting.made, one row per rid)."""
    row = made.loc[rid]
    batch = f"batch {int(row.batch)}" if row.batch >= 0 else "batch (its sink stamps none)"
    again = f"{row.streamlet} {batch} ran again (copy made at {row.hop})"
    if row.fault < 0:
        return f"{again}; no fault before it: unexplained"
    fault = faults[int(row.fault)]
    return f"{again} after fault {int(row.fault) + 1}, {fault.kind} {fault.target}"


def _named(evidence: Evidence, rids: np.ndarray) -> pd.DataFrame:
    names = [evidence.ids.name(int(r)) for r in rids]
    return pd.DataFrame({"key": [k for k, _ in names], "seq": [s for _, s in names]})


def record_sets(
    evidence: Evidence,
    hops: list[HopData],
    lost: np.ndarray,
    lost_first: np.ndarray,
    cause_of_lost: np.ndarray,
    egress_result,
) -> dict[str, pd.DataFrame]:
    """The complete sets, one row per record: lost (with where it was acknowledged, first hop and cause), duplicated
    (deliveries, copies in state), phantom, reordered (the seq delivered before it)."""
    sets = {}
    source = evidence.sent.set_index("rid").reindex(lost)
    sets["lost"] = _named(evidence, lost).assign(
        source_partition=source.partition.to_numpy(),
        source_offset=source.offset.where(source.offset >= 0).astype("Int64").to_numpy(),
        first_hop=[hops[int(i)].name for i in lost_first] if len(hops) else [],
        cause=cause_of_lost,
    )
    if egress_result is None:
        return sets
    deliveries, in_state = egress_result.duplicated_deliveries, egress_result.duplicated_in_state
    duplicated = np.union1d(deliveries.index.to_numpy(), in_state.index.to_numpy()).astype(np.int64)
    sets["duplicated"] = _named(evidence, duplicated).assign(
        deliveries=deliveries.reindex(duplicated).fillna(1).astype(int).to_numpy(),
        copies_in_state=in_state.reindex(duplicated).fillna(1).astype(int).to_numpy(),
    )
    sets["phantom"] = _named(evidence, np.asarray(egress_result.phantom, dtype=np.int64))
    reordered = egress_result.reordered
    sets["reordered"] = _named(evidence, reordered.rid.to_numpy()).assign(
        delivered_after_seq=reordered.after_seq.to_numpy()
    )
    return sets


def seq_ranges(records: pd.DataFrame, by: str | None = None) -> pd.DataFrame:
    """Per key (and `by`), runs of consecutive integer seqs: key, first_seq, last_seq, records."""
    numeric = records[records.seq.map(lambda v: isinstance(v, (int, np.integer)))]
    if numeric.empty:
        return pd.DataFrame(columns=["key", *([by] if by else []), "first_seq", "last_seq", "records"])
    groups = ["key", *([by] if by else [])]
    frame = numeric.assign(seq=numeric.seq.astype(np.int64)).sort_values(groups + ["seq"])
    new_run = (frame.seq.diff() != 1) | (frame[groups] != frame[groups].shift()).any(axis=1)
    frame = frame.assign(run=new_run.cumsum())
    return (
        frame.groupby(groups + ["run"], sort=False)
        .seq.agg(first_seq="min", last_seq="max", records="count")
        .reset_index()
        .drop(columns="run")
    )


def _witnesses(context: Context) -> None:
    """A few witnesses per anomaly class, the complete sets, and how many records each class has."""
    lost, lost_first, cause_of_lost = context.lost, context.lost_first, context.cause_of_lost
    egress_result, accounting, faults = context.egress_result, context.accounting, context.faults
    lost_index = pd.Series(np.arange(len(lost)), index=lost)
    dup_index = pd.Series(np.arange(len(context.duplicated)), index=context.duplicated)
    made = accounting.made.drop_duplicates("rid").set_index("rid")

    def explain_lost(rid):
        i = lost_index[rid]
        return int(lost_first[i]), str(cause_of_lost[i])

    def explain_duplicate(rid):
        if rid not in dup_index.index:
            return None, None
        cause = replay_cause(made, rid, faults) if rid in made.index else None
        return int(context.duplicated_first[dup_index[rid]]), cause

    classes = [AnomalyClass("lost", lost, explain_lost)]
    if egress_result is not None:
        deliveries, in_state = egress_result.duplicated_deliveries, egress_result.duplicated_in_state
        classes += [
            AnomalyClass("duplicated_deliveries", deliveries.index.to_numpy(), explain_duplicate),
            AnomalyClass("duplicated_in_state", in_state.index.to_numpy(), explain_duplicate),
            AnomalyClass("phantom", egress_result.phantom, lambda rid: (None, None)),
            AnomalyClass("reordered", egress_result.reordered.rid.to_numpy(), lambda rid: (None, None)),
        ]
    context.witnesses = witnesses(context.evidence, context.hops, classes, accounting) + context.window_witnesses
    context.witness_totals = context.witness_totals | {c.name: len(c.rids) for c in classes}
    context.records = record_sets(context.evidence, context.hops, lost, lost_first, cause_of_lost, egress_result)


STEP = Step("witnesses", _witnesses, needs=("counts", "copies", "faults"))
