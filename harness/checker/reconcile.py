"""Reconciling sequence numbers: what the source acknowledged against what a hop or the egress got.

Pure and vectorized (pandas): records are identified by (key, seq); no loop
per record. The definitions are those of docs/checker.md:

    lost                  acknowledged, and no copy in the final state
    duplicated_deliveries records delivered more than once (audit log)
    duplicated_in_state   records with more than one copy in the final state
    phantom               records delivered or stored that were never sent
    reordered             per key, a first delivery whose seq is below one delivered before it

Records sent with unknown outcome may appear zero times or once without
counting as lost.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

ID = ["key", "seq"]


@dataclass(frozen=True)
class Counts:
    acked: int
    unknown: int
    lost: int
    duplicated_deliveries: int
    duplicated_in_state: int
    phantom: int
    reordered: int


@dataclass(frozen=True)
class Reconciliation:
    counts: Counts
    lost: pd.DataFrame  # key, seq (+ partition, offset at the source)
    duplicated_deliveries: pd.DataFrame  # key, seq, copies
    duplicated_in_state: pd.DataFrame  # key, seq, copies
    phantom: pd.DataFrame  # key, seq
    reordered: pd.DataFrame  # key, seq, after_seq


def _copies(frame: pd.DataFrame) -> pd.DataFrame:
    if frame.empty:
        return pd.DataFrame({"key": pd.Series(dtype=object), "seq": pd.Series(dtype="int64"), "copies": pd.Series(dtype="int64")})
    return frame.groupby(ID, sort=False).size().rename("copies").reset_index()


def _reordered(deliveries: pd.DataFrame) -> pd.DataFrame:
    """First deliveries, in delivery order, whose seq is below the highest seq delivered before them for the key."""
    first = deliveries.drop_duplicates(ID)
    previous_max = first.groupby("key", sort=False).seq.transform(lambda s: s.cummax().shift(1))
    late = first[first.seq < previous_max]
    return late[ID].assign(after_seq=previous_max[late.index].astype("int64")).reset_index(drop=True)


def reconcile(sent: pd.DataFrame, deliveries: pd.DataFrame, state: pd.DataFrame) -> Reconciliation:
    """`sent`: key, seq, status (acked | unknown), partition, offset; `deliveries`: key, seq in delivery
    order (one row per copy received); `state`: key, seq (one row per copy stored)."""
    sent = sent.drop_duplicates(ID)
    acked = sent[sent.status == "acked"]
    in_state = _copies(state[ID])
    delivered = _copies(deliveries[ID])

    stored = acked.merge(in_state, on=ID, how="left")
    lost = stored[stored.copies.isna()].drop(columns=["copies"])
    seen = pd.concat([delivered[ID], in_state[ID]]).drop_duplicates()
    phantom = seen.merge(sent[ID], on=ID, how="left", indicator=True)
    phantom = phantom[phantom["_merge"] == "left_only"][ID].reset_index(drop=True)
    dup_deliveries = delivered[delivered.copies > 1].reset_index(drop=True)
    dup_state = in_state[in_state.copies > 1].reset_index(drop=True)
    reordered = _reordered(deliveries[ID]) if not deliveries.empty else pd.DataFrame(columns=ID + ["after_seq"])
    counts = Counts(
        acked=len(acked), unknown=int((sent.status != "acked").sum()), lost=len(lost),
        duplicated_deliveries=len(dup_deliveries), duplicated_in_state=len(dup_state),
        phantom=len(phantom), reordered=len(reordered),
    )
    return Reconciliation(counts, lost.reset_index(drop=True), dup_deliveries, dup_state, phantom, reordered)


def verdict(counts: Counts) -> str:
    """The strongest guarantee the counts show (docs/checker.md)."""
    if counts.phantom:
        return "none"  # something arrived that was never sent: no guarantee describes that
    duplicated = counts.duplicated_in_state > 0
    if counts.lost:
        return "none" if duplicated else "at-most-once"
    if duplicated:
        return "at-least-once"
    return "effectively-exactly-once" if counts.duplicated_deliveries else "exactly-once"
