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
from harness.checker.rid_sets import isin

WITNESSES_PER_CLASS = 5
MOST_WITNESSES = 12  # per class, when it has more strata (faults x hops x causes) than WITNESSES_PER_CLASS


@dataclass(frozen=True)
class AnomalyClass:
    name: str  # lost | duplicated_deliveries | duplicated_in_state | phantom | reordered
    rids: np.ndarray
    explain: Callable[[int], tuple[int | None, str | None]]  # rid -> (first hop index, cause)
    strata: np.ndarray | None = None  # per rid, what made it so (fault, hop, cause): witnesses are drawn across them


def spread(rids: np.ndarray, strata: np.ndarray | None) -> np.ndarray:
    """The witnesses of a class: the first record of each stratum, then the second of each, ... (so every fault,
    hop and cause that made records of the class shows at least one, up to MOST_WITNESSES), at least
    WITNESSES_PER_CLASS when there are as many records."""
    rids = np.asarray(rids, dtype=np.int64)
    if strata is None or not len(rids):
        return rids[:WITNESSES_PER_CLASS]
    frame = pd.DataFrame({"rid": rids, "stratum": pd.factorize(pd.Series(strata), sort=False)[0]})
    frame["round"] = frame.groupby("stratum", sort=False).cumcount()
    ordered = frame.sort_values(["round", "stratum"], kind="stable")
    count = max(WITNESSES_PER_CLASS, min(frame.stratum.nunique(), MOST_WITNESSES))
    return ordered.rid.to_numpy()[:count]


def _int(value):
    return None if value is None or (isinstance(value, float) and np.isnan(value)) else int(value)


def _place(value):
    """A partition or offset; None where the hop has none (a table's rows: -1)."""
    value = _int(value)
    return None if value is None or value < 0 else value


def _copies(
    hops: list[HopData], rids: np.ndarray, accounting: CopyAccounting, numbers: list[int]
) -> dict[int, list[Copy]]:
    """`numbers`: each fault's number, by its place in the accounting's order (the spans')."""
    made = accounting.made[isin(accounting.made.rid.to_numpy(), rids) & (accounting.made.fault >= 0).to_numpy()]
    made_by = {
        (hop, int(row)): numbers[int(fault)]
        for hop, row, fault in made[["hop", "row", "fault"]].itertuples(index=False)
    }
    found: dict[int, list[Copy]] = {int(r): [] for r in rids}
    for hop in hops:
        rows = copies_of(hop, rids)
        batch_columns = [c for c in rows.columns if c.startswith("batch.")]
        for index, row in zip(rows.index, rows.to_dict("records")):  # a handful of witnesses, not every record
            batches = {c[len("batch.") :]: int(row[c]) for c in batch_columns if row[c] >= 0}
            if hop.kind == EGRESS and row["batch_id"] >= 0:  # -1: the sink stamps no batch
                batches[hop.producer] = int(row["batch_id"])
            found[int(row["rid"])].append(
                Copy(
                    hop.name,
                    _place(row.get("partition")),
                    _place(row.get("offset")),
                    batches,
                    _int(row.get("time_ms")),
                    made_by.get((hop.name, int(index))),
                )
            )
    return found


def witnesses(
    evidence: Evidence,
    hops: list[HopData],
    classes: list[AnomalyClass],
    accounting: CopyAccounting,
    numbers: list[int],
) -> list[Witness]:
    """A few records of each class with every copy of them; `numbers`: each fault's number, by its place."""
    chosen = {c.name: spread(c.rids, c.strata) for c in classes}
    every = np.unique(np.concatenate(list(chosen.values()) + [np.array([], np.int64)]))
    copies = _copies(hops, every, accounting, numbers)
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


def window_witnesses(egress: str, table: pd.DataFrame) -> tuple[list[Witness], dict[str, int]]:
    """The first windows of each anomaly class (`table`: windows.WindowReconciliation.anomalous), and each class's
    total."""
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
                    None if row.key is None else str(row.key),
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
    if row.retried:  # a copy the producer wrote again: the broker's answer to the first was dropped
        fault = faults[int(row.fault)] if row.fault >= 0 else None
        by = f" by fault {fault.number}, {fault.kind} {fault.target}" if fault else ""
        return (
            f"{row.streamlet}'s producer wrote it again (copy made at {row.hop}): its produce response was dropped{by}"
        )
    batch = f"batch {int(row.batch)}" if row.batch >= 0 else "batch (its sink stamps none)"
    again = f"{row.streamlet} {batch} ran again (copy made at {row.hop})"
    if row.fault < 0:
        return f"{again}; no fault before it: unexplained"
    fault = faults[int(row.fault)]
    return f"{again} after fault {fault.number}, {fault.kind} {fault.target}"


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
    duplicated_origin: Callable[[np.ndarray], pd.DataFrame] | None = None,
) -> dict[str, pd.DataFrame]:
    """The complete sets, one row per record: lost (with where it was acknowledged, first hop and cause), duplicated
    (deliveries, copies in state, and where its first extra copy came from: `duplicated_origin`, rids -> first_hop,
    fault, cause), phantom, reordered (the seq delivered before it)."""
    sets = {}
    source = evidence.sent_at(lost, ["partition", "offset"])
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
    if duplicated_origin is not None:
        sets["duplicated"] = pd.concat([sets["duplicated"], duplicated_origin(duplicated)], axis=1)
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
