"""Per-hop reconciliation, and the hop where each anomaly first appears.

A hop is an intermediate topic (every record written to it, as the run
recorded it, in partition/offset order) or the egress (its audit log in arrival order, and its
final state). Hops come in pipeline order; the ingress's output is the first.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from contract.egress import TOPIC
from contract.roles import EGRESS, INGRESS
from harness.checker.intermediate import HopData, Tallies
from harness.checker.load import Evidence
from harness.checker.reconcile import Reconciliation, combine, reconcile
from harness.checker.rid_sets import isin
from harness.checker.step import Context, Key, Step


def _no_rids() -> np.ndarray:
    return np.array([], np.int64)


HOPS: Key[list[HopData]] = Key("hop_data", list)
RECONCILED: Key[list[Reconciliation]] = Key("reconciled", list)  # each hop's, before unfinished.py
EGRESS_RECONCILED: Key[Reconciliation | None] = Key("egress_reconciled")  # the egresses' combined (None: no egress)
MISSING: Key[np.ndarray] = Key("missing", _no_rids)  # the records acknowledged and not at the egress: rids
MISSING_FIRST: Key[np.ndarray] = Key("missing_first", _no_rids)  # per missing record, the hop it first missed at
DUPLICATED: Key[np.ndarray] = Key("duplicated", _no_rids)  # the records delivered twice somewhere: rids
DUPLICATED_FIRST: Key[np.ndarray] = Key("duplicated_first", _no_rids)  # per duplicated record, its first hop
# what the engine tallied with the reconciliation (None: reconcile could not run)
TALLIES: Key[Tallies | None] = Key("tallies")


def hop_data(evidence: Evidence) -> list[HopData]:
    """Record-level hops in pipeline order (topics of window counts are judged as windows, not here)."""
    producers = {topic: s.name for s in evidence.streamlets for topic in s.outputs}
    reads = {
        s.name: next((t for t in s.inputs if t in evidence.topics), None)
        for s in evidence.streamlets
        if s.role != INGRESS
    }
    # an output topic (egress evidence `topic`) is the egress: it holds what its writer read from the hop before
    for s in evidence.streamlets:
        if s.egress_evidence == TOPIC:
            reads[s.name] = next((reads.get(producers[t]) for t in s.inputs if t in producers), None)
    topics_of = {s.name: s.inputs[0] for s in evidence.streamlets if s.egress_evidence == TOPIC and s.inputs}
    hops = []
    for topic, frame in evidence.topics.items():
        if "count" in frame.columns:
            continue
        rows = frame.rename(columns={"timestamp_ms": "time_ms"}, copy=False)  # loaded in partition/offset order
        producer = producers.get(topic, "?")
        hops.append(
            HopData(topic, "topic", producer, rows, None, f"batch.{producer}", reads.get(producer), topic=topic)
        )
    for egress in evidence.egresses:
        if egress.windowed:
            continue
        rows = egress.audit.rename(columns={"received_ms": "time_ms"}, copy=False)
        hops.append(
            HopData(
                egress.name,
                EGRESS,
                egress.name,
                rows,
                egress.state.rid.to_numpy(),
                "batch_id",
                reads.get(egress.name),
                egress.ordered_by_partition,
                topics_of.get(egress.name),
            )
        )
    return hops


def dropped_upstream(evidence: Evidence, producer: str) -> np.ndarray:
    """The rids declared dropped by design by `producer` or any streamlet upstream of it."""
    upstream = evidence.pipeline.upstream_of(producer)
    found = [evidence.dropped[name] for name in upstream if name in evidence.dropped]
    return np.unique(np.concatenate(found)) if found else np.array([], np.int64)


def expected_at(evidence: Evidence, producer: str) -> pd.DataFrame:
    """The acknowledgement log's rows of the records a hop written by `producer` may hold: those of the source
    topics read by it or upstream of it (a workload of one source topic: every row)."""
    return evidence.sent_to(evidence.pipeline.sources_of(producer))


def reconcile_hops(evidence: Evidence, hops: list[HopData]) -> list[Reconciliation]:
    return [
        reconcile(
            expected_at(evidence, h.producer),
            h.rows.rid.to_numpy(),
            h.stored,
            dropped_upstream(evidence, h.producer),
            h.rows.partition.to_numpy() if h.ordered_by_partition else None,
        )
        for h in hops
    ]


def first_lost_hop(hops: list[HopData], results: list[Reconciliation], lost: np.ndarray) -> np.ndarray:
    """For each lost rid: the index of the first hop from which it is missing for good (the hop after
    the last topic that had it) or, when every topic had it, the first egress that did not keep it."""
    first = np.zeros(len(lost), dtype=np.int64)
    topics = [i for i, h in enumerate(hops) if h.kind == "topic"]
    for index in topics:
        first[isin(lost, hops[index].rows.rid.to_numpy())] = index + 1
    passed_every_topic = first == len(topics)
    for index in reversed([i for i, h in enumerate(hops) if h.kind == EGRESS]):
        first[passed_every_topic & isin(lost, results[index].lost)] = index
    return np.minimum(first, len(hops) - 1)


def first_duplicated_hop(hops: list[HopData], results: list[Reconciliation], duplicated: np.ndarray) -> np.ndarray:
    """For each rid duplicated somewhere: the index of the first hop where it has more than one copy."""
    first = np.full(len(duplicated), -1, dtype=np.int64)
    for index, result in reversed(list(enumerate(results))):
        first[isin(duplicated, result.duplicated_deliveries.index)] = index
    return first


def copies_of(hop: HopData, rids: np.ndarray) -> pd.DataFrame:
    """The rows of a hop carrying the given rids, with their copy number (0 = first)."""
    rows = hop.rows[isin(hop.rows.rid.to_numpy(), rids)]
    return rows.assign(copy=rows.groupby("rid", sort=False).cumcount())


def _reconcile(context: Context) -> dict:
    """Every hop against the acknowledged records; the egresses' results combined; where each lost and each
    duplicated record first appears."""
    evidence = context.evidence
    hops = hop_data(evidence)
    # the engine tallies the arrivals, the sendings and the copies in the same reading of the records
    results, tallies = context.engine(evidence, hops, context.spans)
    egress_results = [r for h, r in zip(hops, results) if h.kind == EGRESS]
    # several source topics, each egress its own: the records the egresses together may hold (only numpy judges
    # those runs: the other engines' evidence.sent holds the notable records alone, their totals count the rest)
    expected = (
        evidence.sent_to(tuple({t for h in hops if h.kind == EGRESS for t in evidence.pipeline.sources_of(h.producer)}))
        if evidence.pipeline.source_keys
        else None
    )
    egress_result = combine(egress_results, expected) if egress_results else None
    lost = egress_result.lost if egress_result else _no_rids()
    duplicated = np.unique(np.concatenate([r.duplicated_deliveries.index.to_numpy() for r in results] + [_no_rids()]))
    return {
        HOPS: hops,
        RECONCILED: results,
        EGRESS_RECONCILED: egress_result,
        MISSING: lost,
        MISSING_FIRST: first_lost_hop(hops, results, lost) if len(hops) else _no_rids(),
        DUPLICATED: duplicated,
        DUPLICATED_FIRST: first_duplicated_hop(hops, results, duplicated),
        TALLIES: tallies,
    }


STEP = Step(
    "reconcile",
    _reconcile,
    writes=(HOPS, RECONCILED, EGRESS_RECONCILED, MISSING, MISSING_FIRST, DUPLICATED, DUPLICATED_FIRST, TALLIES),
)
