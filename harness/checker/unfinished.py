"""A run that did not finish (in progress, interrupted, failed, the harness killed): what its evidence proves.

Its records not delivered yet may be in flight, so missing is not lost. A missing record is proven lost only
when retention deleted it before it was read, or when the streamlet that should have written it to the hop
where it first goes missing committed a batch past its offset in that streamlet's input, and the hop's
evidence is complete (the egress's state, or a topic whose recording the run completed). Every other missing
record is undelivered: its own count, never lost. Loss-based verdicts are then unknown.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from harness.checker.causes import CAUSE_OF_MISSING
from harness.checker.hops import EGRESS_RECONCILED, HOPS, MISSING, MISSING_FIRST, RECONCILED, TALLIES
from harness.checker.intermediate import HopData
from harness.checker.load import Evidence
from harness.checker.offsets import committed_ends
from harness.checker.reconcile import Reconciliation
from harness.checker.record_ids import split_rid
from harness.checker.rid_sets import isin
from harness.checker.step import Context, Key, Step
from harness.evidence.history import TOPIC_RECREATED, TOPICS_RECORDED


def unfinished_reason(evidence: Evidence, running: tuple[str, ...]) -> str:
    """Why this run is not a finished one ("" when it is): missing deliveries are not losses then."""
    if running:
        return f"run in progress: {', '.join(running)} still running"
    if not evidence.run:
        return "run.json missing: the run did not finish (still in progress, or the harness was killed)"
    status = evidence.run.get("status")
    if status != "complete":
        return f"run {status}: it stopped before the pipeline drained"
    return ""


def proven_lost(
    evidence: Evidence, hops: list[HopData], lost: np.ndarray, lost_first: np.ndarray, cause_of_lost: np.ndarray
) -> np.ndarray:
    """Mask over `lost` (records missing at the egress): those the evidence of an unfinished run proves lost."""
    proven = np.asarray(cause_of_lost) == "retention"
    recorded = any(e["event"] == TOPICS_RECORDED for e in evidence.history)
    recreated = {t for e in evidence.history if e["event"] == TOPIC_RECREATED for t in e.get("topics", [])}
    for index, hop in enumerate(hops):
        at = np.flatnonzero(np.asarray(lost_first) == index)
        if not len(at) or (hop.kind == "topic" and not recorded):
            continue  # a topic recorded only in part proves nothing
        for source in [hop.upstream] if hop.upstream else evidence.pipeline.sources_of(hop.producer):
            if source in recreated:
                continue  # offsets that went back prove nothing
            read = committed_ends(evidence.progress.get(hop.producer) or [], (source,))
            if read.empty:
                continue
            ends = read.groupby("partition").committed.max()
            inputs = evidence.topics[source] if hop.upstream else _acknowledged(evidence.sent_to((source,)))
            rows = inputs[isin(inputs.rid.to_numpy(), lost[at])]
            committed = ends.reindex(rows.partition.to_numpy()).fillna(-1).to_numpy()
            read_past = pd.unique(rows.rid.to_numpy()[rows.offset.to_numpy() < committed])
            proven[at[isin(lost[at], read_past)]] = True
    return proven


def _acknowledged(sent: pd.DataFrame) -> pd.DataFrame:
    """The source's records with the offset the broker acknowledged them at."""
    return sent[sent.acked.to_numpy() & (sent.offset.to_numpy() >= 0)]


def not_logged_yet(logged: np.ndarray, phantom: np.ndarray) -> np.ndarray:
    """Mask over `phantom` (rids never sent): records of a key the acknowledgement log knows with a seq past the last
    it holds of that key (`logged`: rids of the log's records, or of each key's last one). The generator numbers each
    key's records in order and writes the log in batches, so in a run still going such a record was sent after the
    log's last write: not a phantom yet."""
    rid = np.asarray(logged, np.int64)
    codes, seqs = split_rid(rid[rid >= 0])
    last = np.full(int(codes.max()) + 1 if len(codes) else 0, -1, np.int64)
    np.maximum.at(last, codes, seqs)
    code, seq = split_rid(phantom)
    known = (np.asarray(phantom) >= 0) & (code < len(last))
    return known & (seq > last[np.where(known, code, 0)] if len(last) else False)


def _without(result: Reconciliation, phantom: np.ndarray) -> Reconciliation:
    kept = result.phantom[~isin(result.phantom, phantom)]
    return replace(result, phantom=kept, counts=replace(result.counts, phantom=len(kept)))


# what reconcile and causes found of the missing records, of those proven lost only (in a finished run, all of them)
LOST: Key[np.ndarray] = Key("lost", lambda: np.array([], np.int64))
LOST_FIRST: Key[np.ndarray] = Key("lost_first", lambda: np.array([], np.int64))
CAUSE_OF_LOST: Key[np.ndarray] = Key("cause_of_lost", lambda: np.array([], object))
UNDELIVERED: Key[np.ndarray] = Key("undelivered", lambda: np.array([], np.int64))  # missing, not proven lost
# each hop's reconciliation, and the egresses', without the records the acknowledgement log has not recorded yet
RESULTS: Key[list[Reconciliation]] = Key("results", list)
EGRESS_RESULT: Key[Reconciliation | None] = Key("egress_result")
LOST_KNOWN: Key[bool] = Key("lost_known", lambda: False)  # False: which missing records are lost could not be told


def _split(context: Context) -> dict:
    """In a run that did not finish, the missing records the evidence does not prove lost become undelivered, and
    the records that reached a hop before the acknowledgement log recorded them are not phantoms."""
    found = _as_reconciled(context) | {LOST_KNOWN: True}
    if not context.unfinished:
        return found
    lost, first, cause = context[MISSING], context[MISSING_FIRST], context[CAUSE_OF_MISSING]
    proven = proven_lost(context.evidence, context[HOPS], lost, first, cause)
    found |= {UNDELIVERED: lost[~proven], LOST: lost[proven], LOST_FIRST: first[proven], CAUSE_OF_LOST: cause[proven]}
    results = context[RECONCILED]
    phantom = np.unique(np.concatenate([r.phantom for r in results] + [np.array([], np.int64)]))
    # the log's records: each key's last as an engine counted them, or the whole log loaded
    logged = context[TALLIES].logged
    unlogged = phantom[not_logged_yet(logged, phantom)]
    if len(unlogged):
        egress = context[EGRESS_RECONCILED]
        found |= {
            RESULTS: [_without(r, unlogged) for r in results],
            EGRESS_RESULT: egress and _without(egress, unlogged),
        }
        context.gaps.append(
            f"{len(unlogged):,} record(s) reached the pipeline before the acknowledgement log recorded them (the "
            "generator writes it in batches): not counted, as phantoms or otherwise, until it does"
        )
    return found


def _as_reconciled(context: Context) -> dict:
    """Every missing record lost, as reconcile and causes found them (a finished run's, or where this step could
    not tell: which are lost is known then only if the run finished)."""
    return {
        LOST: context[MISSING],
        LOST_FIRST: context[MISSING_FIRST],
        CAUSE_OF_LOST: context[CAUSE_OF_MISSING],
        UNDELIVERED: np.array([], np.int64),
        RESULTS: context[RECONCILED],
        EGRESS_RESULT: context[EGRESS_RECONCILED],
        LOST_KNOWN: not context.unfinished,
    }


STEP = Step(
    "unfinished",
    _split,
    writes=(LOST, LOST_FIRST, CAUSE_OF_LOST, UNDELIVERED, RESULTS, EGRESS_RESULT, LOST_KNOWN),
    needs=(HOPS, MISSING, MISSING_FIRST, RECONCILED, EGRESS_RECONCILED, TALLIES),
    uses=(CAUSE_OF_MISSING,),
    unknown=_as_reconciled,
)
