"""Copy-level accounting: every extra copy of a record, at the hop where it was made, by the batch that made it,
after the fault that made that batch run again.

At a hop, a record has n copies; n - 1 of them are extra. Some came from upstream (the
producer faithfully processed every copy it read), the rest were made here (the producer
wrote the same input again: a replayed batch). Copies are told apart by the batch stamps
they carry: a copy at hop h stamped with the upstream streamlets' batches (u1, u2, ...)
was made from an input copy at hop h-1 carrying exactly those stamps. So per record and
stamp group g:

    made here (g) = n_h(g) - max(n_{h-1}(g), 1)      (never below 0)

A replay upstream gives copies with the same upstream stamps there, and the same number
here: inherited, not made here. The copies made here are the last of their group in
delivery order; their own batch id is the batch that made them. At an egress the final
state then shows how many re-delivered copies it kept (copies in state beyond one) and
how many it absorbed (the rest).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from contract.roles import EGRESS
from harness.checker.findings import HopCopies
from harness.checker.hops import HOPS, TALLIES
from harness.checker.intermediate import CopyAccounting, FaultSpan, HopData, SentCopies
from harness.checker.offsets import offset_samples
from harness.checker.rid_sets import copies, first_occurrences, isin, more_than_once
from harness.checker.step import Context, Key, Step

COLUMNS = ["rid", "hop", "row", "streamlet", "batch", "time_ms", "fault", "retried"]
ACCOUNTING: Key[CopyAccounting | None] = Key("accounting")  # every extra copy: where, by which batch, after which fault


def _stamp_columns(rows: pd.DataFrame, own: str | None) -> list[str]:
    return sorted(c for c in rows.columns if c.startswith("batch.") and c != own)


def _group_keys(rows: pd.DataFrame, columns: list[str]) -> pd.Series:
    """One hashable key per row: its rid and the given stamp columns."""
    frame = rows[["rid", *columns]]
    return pd.Series(
        pd.MultiIndex.from_frame(frame).to_flat_index() if columns else frame.rid.to_numpy(), index=rows.index
    )


def _made_at(hop: HopData, upstream: HopData | None, sent_rids: pd.Index, at_source: pd.Series) -> pd.DataFrame:
    """The copies made at `hop` (rows of it), beyond what `upstream` delivered with the same stamps (beyond
    `at_source`, copies per rid written to the source topic, for a hop reading it)."""
    rows = hop.rows
    rid = rows.rid.to_numpy()
    repeated = pd.unique(rid[more_than_once(rid)])  # the few with copies, without counting every record's
    repeated = repeated[isin(repeated, sent_rids)]
    if not len(repeated):
        return rows.iloc[:0]
    candidates = rows[isin(rows.rid.to_numpy(), repeated)]
    own = hop.batch_column if hop.kind == "topic" else None  # an egress's own batch is its batch_id column, not a stamp
    stamps = _stamp_columns(candidates, own)
    keys = _group_keys(candidates, stamps)
    before = at_source  # the first hop: one copy of each record came in, or more (aborted transactions, resends)
    if upstream is not None:
        up = upstream.rows[isin(upstream.rows.rid.to_numpy(), repeated)]
        up = up.assign(**{c: -1 for c in stamps if c not in up.columns})
        before = _group_keys(up, stamps).value_counts(sort=False)
    position = keys.groupby(keys, sort=False).cumcount().to_numpy()  # 0 for a group's first copy here
    allowed = np.maximum(keys.map(before).fillna(0).to_numpy(dtype=np.int64), 1)
    return candidates[position >= allowed]


def _preceding_fault(times: np.ndarray, spans: list[FaultSpan], candidates: list[int]) -> np.ndarray:
    """Index of the last candidate fault begun at or before each time (-1: none)."""
    if not candidates:
        return np.full(len(times), -1, dtype=np.int64)
    starts = np.array([spans[i].start_ms for i in candidates])
    order = np.argsort(starts, kind="stable")
    position = np.searchsorted(starts[order], times, side="right") - 1
    return np.where(position >= 0, np.array(candidates)[order][np.maximum(position, 0)], -1)


def written_after(hop: HopData, rows: pd.DataFrame, samples: pd.DataFrame) -> np.ndarray:
    """Per row of a topic's copies, when it was last sampled with its log end at or below the copy's offset: the
    copy was written after then (0: before any sample). A copy's own timestamp is the job's to set (a job passing its
    input's `timestamp` column on gives its copies the source's), the broker's log end is not: a replay's copies are
    written after the kill that made it, since the sampler looks once a second and a restart takes longer."""
    found = np.zeros(len(rows), np.int64)
    if hop.topic is None or samples.empty:
        return found
    mine = samples[samples.topic.to_numpy() == hop.topic]
    partitions, offsets = rows.partition.to_numpy(), rows.offset.to_numpy()
    for partition, taken in mine.groupby("partition", sort=False):
        taken = taken.sort_values("ts", kind="stable")
        ends = np.maximum.accumulate(taken.log_end.to_numpy())
        here = partitions == partition
        last = np.searchsorted(ends, offsets[here], side="right") - 1
        found[here] = np.where(last >= 0, taken.ts.to_numpy()[np.maximum(last, 0)], 0)
    return found


def source_copies(sent: pd.DataFrame, deduplicated: bool) -> pd.Series:
    """Copies on the source topic per record with more than one: aborted transactions' and, unless the hop's
    producer deduplicates (a declared deduplication: it is not expected to pass them), the resend fault's and those
    its producer wrote again after a lost produce response (harness/checker/retried.py)."""
    again = sent.resent_copies.to_numpy() + sent.retried_copies.to_numpy()
    beyond = sent.aborted_copies.to_numpy() + (0 if deduplicated else again)
    return pd.Series(beyond[beyond > 0] + 1, index=sent.rid.to_numpy()[beyond > 0])


def sent_copies(hop: HopData, sent_rids: pd.Index) -> SentCopies:
    """The hop's copies of the records sent (`sent_rids`), counted in its rows."""
    of_sent = isin(hop.rows.rid.to_numpy(), sent_rids)
    sent_rows = hop.rows.rid[of_sent]
    kept = None
    if hop.stored is not None:
        in_state = copies(hop.stored)
        kept = int((in_state[isin(in_state.index, sent_rids)] - 1).clip(lower=0).sum())
    headless = None  # the loader marks each copy of a topic with has_header where a source header is looked for
    if "has_header" in hop.rows.columns:
        headless = int((~hop.rows.has_header.to_numpy(dtype=bool)[of_sent]).sum())
    return SentCopies(len(sent_rows), int(first_occurrences(sent_rows).sum()), kept, headless)


def account(
    hops: list[HopData],
    sent: pd.DataFrame,
    spans: list[FaultSpan],
    counted: list[SentCopies],
    deduplicating: frozenset = frozenset(),
    samples: pd.DataFrame | None = None,
    lost_responses: dict[tuple[str, int], list[int]] | None = None,
) -> CopyAccounting:
    """`sent`: rid, aborted_copies, resent_copies and retried_copies (copies on the source topic beyond the first
    committed one: in aborted transactions, sent again on purpose, written again after a lost response) per record
    sent; `counted`: each hop's copies of the records
    sent (the engine's tally); `deduplicating`: the streamlets declaring a deduplication (the copies they write of a
    re-sent record are theirs, not the source's); `samples`: the topics' offsets as sampled (offsets.py), which
    date a topic's copies no earlier than the run of their writer that wrote them; `lost_responses`: per topic
    partition, the offsets of records whose produce response was dropped (retried.py). Each copy made is credited to
    the last fault disturbing its writer that began before it was written; one of a record with a copy where a
    response was dropped is `retried`: its producer wrote it again, not a batch run again."""
    sent_rids = sent.rid.to_numpy()
    at_source = {dedup: source_copies(sent, dedup) for dedup in (False, True)}
    by_name = {h.name: h for h in hops}
    sent_index = pd.Index(sent_rids)
    per_hop, frames = {}, []
    for index, hop in enumerate(hops):
        here = counted[index]
        upstream = by_name.get(hop.upstream) if hop.upstream else None
        made = _made_at(hop, upstream, sent_index, at_source[hop.producer in deduplicating])
        extra = here.copies - here.distinct
        absorbed = None if here.kept is None else extra - here.kept
        per_hop[hop.name] = HopCopies(here.copies, extra, len(made), extra - len(made), here.kept, absorbed)
        if len(made):
            times = made.time_ms.to_numpy(dtype=np.int64)
            written = times if samples is None else np.maximum(times, written_after(hop, made, samples))
            # Faults that make this hop's producer run a batch again: those on it (restarts, executor crashes,
            # its network link) and those of the whole cluster (brokers).
            own = [i for i, s in enumerate(spans) if s.target == hop.producer or s.scope == "cluster"]
            fault = _preceding_fault(written, spans, own)
            fallback = _preceding_fault(written, spans, list(range(len(spans))))
            frames.append(
                pd.DataFrame(
                    {
                        "rid": made.rid.to_numpy(),
                        "hop": hop.name,
                        "row": made.index.to_numpy(),
                        "streamlet": hop.producer,
                        "batch": made[hop.batch_column].to_numpy() if hop.batch_column in made else -1,
                        "time_ms": times,
                        "fault": np.where(fault >= 0, fault, fallback),
                        "retried": isin(made.rid.to_numpy(), _unanswered(hop, lost_responses or {})),
                    }
                )
            )
    table = (
        pd.concat(frames, ignore_index=True)
        if frames
        else pd.DataFrame(columns=COLUMNS).astype({"fault": "int64", "rid": "int64", "row": "int64", "retried": bool})
    )
    return CopyAccounting(per_hop, table)


def _unanswered(hop: HopData, lost_responses: dict[tuple[str, int], list[int]]) -> np.ndarray:
    """The rids with a copy on the hop's topic at an offset whose produce response was dropped."""
    wanted = [(p, o) for (topic, p), offsets in lost_responses.items() if topic == hop.topic for o in offsets]
    if not wanted:
        return np.array([], np.int64)
    at = pd.MultiIndex.from_arrays([hop.rows.partition, hop.rows.offset]).isin(pd.MultiIndex.from_tuples(wanted))
    return pd.unique(hop.rows.rid.to_numpy()[at])


def deduplicating(streamlets) -> frozenset:
    """The hops' producers whose copies are a job's that declares a deduplication: the job, and the outputs it
    writes (a Kafka output reading its topic, a table output written_by it)."""
    jobs = {s.name: set(s.outputs) for s in streamlets if s.deduplicates_within_s}
    outputs = {
        s.name
        for s in streamlets
        for job, topics in jobs.items()
        if s.written_by == job or s.role == EGRESS and topics & set(s.inputs)
    }
    return frozenset(jobs) | outputs


def _copies(context: Context) -> dict:
    evidence = context.evidence
    accounting = account(
        context[HOPS],
        evidence.sent,
        context.spans,
        context[TALLIES].copies,
        deduplicating(evidence.streamlets),
        offset_samples(evidence.history),
        evidence.lost_responses,
    )
    return {ACCOUNTING: accounting}


STEP = Step("copies", _copies, writes=(ACCOUNTING,), needs=(HOPS, TALLIES))
