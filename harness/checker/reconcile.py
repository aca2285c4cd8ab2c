"""Reconciling sequence numbers: what the source acknowledged against what a hop or the egress got.

Pure and vectorized: records are int64 rids (harness.checker.record_ids), every
step is a table lookup, a count, a sort or a grouped cumulative max; no loop per record.
The definitions (docs/checker.md):

    lost                  acknowledged, not dropped by design upstream, and no copy in the final state
                          (of a run that did not finish: only where proven, harness.checker.unfinished)
    undelivered           of a run that did not finish: missing, not proven lost (it may be in flight)
    dropped               acknowledged, and declared dropped by design by a streamlet upstream
    duplicated_deliveries records delivered more than once (audit log)
    duplicated_in_state   records with more than one copy in the final state
    phantom               records delivered or stored that were never sent (any key and seq,
                          counted per record)
    reordered             per key, a first delivery whose seq is below one delivered before it

Records sent with unknown outcome may appear zero times or once without
counting as lost. A count that could not be computed (no evidence for it) is
None, never 0, and the verdict over such counts is "unknown".
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import numpy as np
import pandas as pd

from harness.checker.record_ids import SEQ_BITS, split_rid
from harness.checker.rid_sets import copies, first_occurrences, isin


@dataclass(frozen=True)
class Counts:
    """Records per anomaly class (None: could not be computed from the evidence)."""

    acked: int | None
    unknown: int | None
    lost: int | None
    duplicated_deliveries: int | None
    duplicated_in_state: int | None
    phantom: int | None
    reordered: int | None
    dropped: int | None = 0  # by design, declared by a streamlet (not a loss)
    undelivered: int | None = 0  # missing from a run that did not finish, and not proven lost (maybe in flight)

    @classmethod
    def unmeasured(cls, acked: int | None = None, unknown: int | None = None) -> "Counts":
        """What is known without any egress evidence: the source's side only."""
        return cls(acked, unknown, None, None, None, None, None, None, None)

    @property
    def complete(self) -> bool:
        return None not in (self.lost, self.duplicated_deliveries, self.duplicated_in_state, self.phantom)

    @classmethod
    def summed(cls, counts: list["Counts"]) -> "Counts":
        """Several outputs' counts of the same records as one: the records sent as the first says, each anomaly
        added up (None where one is None)."""
        found = {}
        for f in fields(cls):
            values = [getattr(c, f.name) for c in counts]
            found[f.name] = values[0] if f.name in ("acked", "unknown") else None if None in values else sum(values)
        return cls(**found)


@dataclass(frozen=True)
class Reconciliation:
    counts: Counts
    lost: np.ndarray  # rids
    duplicated_deliveries: pd.Series  # copies by rid (> 1)
    duplicated_in_state: pd.Series  # copies by rid (> 1)
    phantom: np.ndarray  # rids never sent
    reordered: pd.DataFrame  # rid, after_seq
    dropped: np.ndarray = field(default_factory=lambda: np.array([], np.int64))  # acked rids dropped by design upstream


def _never_sent(distinct: pd.Index, sent: pd.DataFrame) -> np.ndarray:
    return distinct[~isin(distinct, sent.rid)].to_numpy()


def _sent_more_than_once(copies_by_rid: pd.Series, sent: pd.DataFrame) -> pd.Series:
    """Records that were sent and have more than one copy (a phantom's copies count as phantom, not duplicate)."""
    more = copies_by_rid[copies_by_rid > 1]
    return more[isin(more.index, sent.rid)]


def reordered(delivered: np.ndarray, within: np.ndarray | None = None) -> pd.DataFrame:
    """First deliveries, in delivery order, whose seq is below the highest seq of the key delivered before them
    (with `within`, a group per copy: before them in their group, e.g. a partition of an output keyed otherwise)."""
    ordinary = delivered >= 0
    rids = delivered[ordinary]
    first_at = np.flatnonzero(first_occurrences(rids))
    first = rids[first_at]
    del rids
    key, seq = split_rid(first)
    if within is not None:
        key = key * (1 << 20) + np.asarray(within)[ordinary][first_at].astype(np.int64)
    del first_at
    after = highest_before(key, seq)
    late = seq < after
    return pd.DataFrame({"rid": first[late], "after_seq": after[late]})


SEQ_SPACE = 1 << SEQ_BITS  # an ordinary record's seq is below it
GROUPS_PER_PASS = 1 << 22  # a group's number below it, x SEQ_SPACE + seq stays within int64


def highest_before(group: np.ndarray, seq: np.ndarray) -> np.ndarray:
    """Per position, the highest seq (0 <= seq < SEQ_SPACE) of its group at an earlier position; -1 for a group's
    first. One running maximum over the positions sorted by group, each group's seqs lifted above those of the
    groups before it (its number x SEQ_SPACE); with many groups, a pass per GROUPS_PER_PASS of them. (pandas'
    groupby cummax then shift took twice the time and held twice the memory.)"""
    if not len(seq):
        return np.array([], np.int64)
    codes, groups = pd.factorize(group)  # numbered from 0: a few thousand of them are sorted by radix
    codes = codes.astype(np.uint16) if len(groups) <= 1 << 16 else codes
    del groups
    order = np.argsort(codes, kind="stable")  # a group's positions stay in their order
    number = codes[order]
    del codes
    starts = np.empty(len(number), bool)
    starts[0] = True
    np.not_equal(number[1:], number[:-1], out=starts[1:])
    running = seq[order]
    for low in range(0, int(number[-1]) + 1, GROUPS_PER_PASS):
        part = (
            slice(None)  # one pass (the usual case) needs no search
            if int(number[-1]) < GROUPS_PER_PASS
            else slice(*np.searchsorted(number, np.array([low, low + GROUPS_PER_PASS], number.dtype)))
        )
        lift = number[part].astype(np.int64)
        lift -= low
        lift *= SEQ_SPACE
        running[part] += lift
        np.maximum.accumulate(running[part], out=running[part])
        running[part] -= lift
        del lift
    del number
    running[1:] = running[:-1].copy()  # the maximum before each position: the one after its predecessor
    running[starts] = -1
    out = np.empty_like(running)
    out[order] = running
    return out


def reconcile(
    sent: pd.DataFrame,
    delivered: np.ndarray,
    stored: np.ndarray | None = None,
    dropped: np.ndarray | None = None,
    order_within: np.ndarray | None = None,
) -> Reconciliation:
    """`sent`: rid, acked (one row per record sent); `delivered`: rids in delivery order, one per copy
    received; `stored`: rids, one per copy in the final state (None for a topic: what it delivered);
    `dropped`: rids declared dropped by design upstream of this hop (expected missing, not lost);
    `order_within`: per copy, the group its order is judged in (None: one order per key)."""
    acked = sent.rid.to_numpy()[sent.acked.to_numpy()]
    delivered_copies = copies(delivered)
    in_state = delivered_copies if stored is None else copies(stored)
    by_design = isin(acked, dropped) if dropped is not None and len(dropped) else np.zeros(len(acked), bool)
    lost = acked[~by_design & ~isin(acked, in_state.index)]
    phantom = _never_sent(delivered_copies.index, sent)
    if stored is not None:
        phantom = np.union1d(phantom, _never_sent(in_state.index, sent))  # small sets: the phantoms only
    dup_deliveries = _sent_more_than_once(delivered_copies, sent)
    dup_state = _sent_more_than_once(in_state, sent)
    late = reordered(delivered, order_within)
    unknown = int((~sent.acked).sum())
    return reconciliation(len(acked), unknown, lost, dup_deliveries, dup_state, phantom, late, acked[by_design])


def reconciliation(
    acked: int,
    unknown: int,
    lost: np.ndarray,
    dup_deliveries: pd.Series,
    dup_state: pd.Series,
    phantom: np.ndarray,
    late: pd.DataFrame,
    dropped: np.ndarray,
) -> Reconciliation:
    """A Reconciliation of these records, its counts theirs (the source's acked and unknown given)."""
    counts = Counts(
        acked=acked,
        unknown=unknown,
        lost=len(lost),
        duplicated_deliveries=len(dup_deliveries),
        duplicated_in_state=len(dup_state),
        phantom=len(phantom),
        reordered=len(late),
        dropped=len(dropped),
    )
    return Reconciliation(counts, lost, dup_deliveries, dup_state, phantom, late, dropped)


def combine(results: list[Reconciliation], expected: pd.DataFrame | None = None) -> Reconciliation:
    """End to end over several egresses (a fan-out): a record counts as lost, duplicated, phantom or
    reordered when it is so at any egress, with its highest number of copies there; as dropped by design when
    every egress expected it missing (a record routed to one output, a dead letter, is dropped at the others).
    `expected`: the acknowledgement log's rows of the records the egresses together may hold (several source topics,
    each egress its own: their acked and unknown counts; None: the first egress's)."""
    if len(results) == 1:
        return results[0]

    def union(arrays) -> np.ndarray:
        return np.unique(np.concatenate([np.asarray(a, np.int64) for a in arrays] + [np.array([], np.int64)]))

    def most_copies(series) -> pd.Series:
        return pd.concat(series).groupby(level=0).max() if series else pd.Series(dtype=np.int64)

    lost = union(r.lost for r in results)
    phantom = union(r.phantom for r in results)
    dup_deliveries = most_copies([r.duplicated_deliveries for r in results])
    dup_state = most_copies([r.duplicated_in_state for r in results])
    late = pd.concat([r.reordered for r in results]).drop_duplicates("rid")
    dropped = np.asarray(results[0].dropped, np.int64)
    for r in results[1:]:
        dropped = np.intersect1d(dropped, np.asarray(r.dropped, np.int64))
    acked, unknown = results[0].counts.acked, results[0].counts.unknown
    if expected is not None:
        acked = int(expected.acked.sum())
        unknown = len(expected) - acked
    return reconciliation(acked, unknown, lost, dup_deliveries, dup_state, phantom, late, dropped)


def verdict(counts: Counts) -> str:
    """The strongest guarantee the counts show (docs/checker.md); unknown when a count is missing."""
    if not counts.complete:
        return "unknown"
    if counts.phantom:
        return "none"  # something arrived that was never sent: no guarantee describes that
    duplicated = counts.duplicated_in_state > 0
    if counts.lost:
        return "none" if duplicated else "at-most-once"
    if duplicated:
        return "at-least-once"
    return "effectively-exactly-once" if counts.duplicated_deliveries else "exactly-once"
