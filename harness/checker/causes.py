"""Why records were lost or duplicated, shown from the evidence (or called unexplained).

Losses, in this order of precedence:
    leader_truncated
                  at an offset of a source topic that acks.csv shows acknowledged again, to another record: the
                  leader that acknowledged it was replaced by a replica without it (the producer's acks 1, or an
                  unclean election), which gave the offset to a later write (not told where the source topic
                  was re-created: the new topic gives its offsets again)
    retention     at an offset of the stopped streamlet's input topic (source or intermediate)
                  between the position it had committed and the log-start offset observed when
                  it resumed, with no copy after it: deleted unread (history: consumer_position,
                  log_start_observed; the records: topics/<topic>.jsonl, or acks.csv for the source;
                  a record the recording never saw because retention deleted it first is placed by the
                  records written before and after it);
                  or, with no fault shrinking anything (routine retention: a consumer down or
                  behind for longer than retention.ms), never received by the streamlet that lost
                  it (or received by an egress driver that died before the batch committed), and
                  below its input partition's log start (history offsets, sampled once a second)
                  with no sample showing it retained after that streamlet's committed batches had
                  read past it (progress end offsets), and no topic re-creation explains it (a re-created
                  source topic's records compared only with what was observed of their own topic);
                  never a record acknowledged without an offset
    redeploy      at an offset of the input topic (source or intermediate) after the committed
                  position of a streamlet restarted past it (fault_begun skips_to: a redeploy
                  without its checkpoint from `latest` or a timestamp), written
                  before its new query's first batch
    topic_recreated
                  at the source topic of a streamlet under which it was deleted and created again
                  (history topic_recreated), each record's topic told by send order (source_eras): in
                  the old topic at an offset at or above what the streamlet had committed at the
                  deletion (its unread records), or in the new topic at an offset below the end offset
                  of the streamlet's first batch that went back (the records it jumped over), or below
                  its position at the deletion where no batch went back (it carried on from there), or in
                  the new topic at an offset where the deleted topic's record, unread at the deletion,
                  arrived instead (Spark's cached consumer served it from data it had fetched before
                  the deletion), or in the new topic within a later batch that read fewer records than
                  its offsets span (planned to the deleted topic's ends)
    watermark     a late event (acks.csv late=1) in a pipeline with an event-time watermark
    query_failed  first missing at the output of a streamlet whose query failed and stayed down
    unexplained   none of the above
Extra copies (duplicates) are accounted for in harness/checker/copies.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np
import pandas as pd

from contract.applications import OUTPUT_KINDS
from contract.query_events import QUERY_PROGRESS
from contract.roles import EGRESS
from harness.checker.eras import Recreation, recreations
from harness.checker.eras import source_eras as eras_of
from harness.checker.file_readers import PLACE_BITS, acked_at
from harness.checker.hops import HOPS, MISSING, MISSING_FIRST
from harness.checker.intermediate import FaultSpan, HopData
from harness.checker.load import Evidence
from harness.checker.offsets import committed_ends, offset_samples
from harness.checker.record_ids import split_rid
from harness.checker.rid_sets import isin
from harness.checker.step import Context, Key, Step
from harness.evidence.history import (
    CONSUMER_POSITION,
    LOG_START_OBSERVED,
    PROCESS_EXITED,
    PROCESS_KILLED,
    PROCESS_STOPPED,
    QUERY_FAILED,
    TOPICS_RECORDED,
)
from harness.evidence.layout import RunLayout
from harness.evidence.progress import source_offsets


@dataclass(frozen=True)
class RetentionWindow:
    streamlet: str
    topic: str
    start_ms: int
    acked_in_window: int  # acknowledged records between the committed position and the log start
    reached_downstream: int  # of those, written downstream by the batch interrupted at the stop
    lost: int  # of those, lost end to end
    exact: bool  # lost == acked_in_window - reached_downstream: the lost set is the deleted range


def _positions(event: dict) -> dict[tuple[str, int], int]:
    return {(row[0], int(row[1])): int(row[2]) for row in event.get("partitions", [])}


def _paired(history: list[dict], first: str, second: str):
    """(first, second) event pairs of the same streamlet: consumer_position then log_start_observed."""
    pending = {}
    for event in history:
        if event["event"] == first:
            pending[event.get("streamlet")] = event
        elif event["event"] == second and event.get("streamlet") in pending:
            yield pending.pop(event.get("streamlet")), event


def _at_offsets(rows: pd.DataFrame, topic_offsets: dict[int, tuple[int, int]]) -> np.ndarray:
    """Mask over `rows` (with partition and offset columns): at partition p with low <= offset < high."""
    mask = np.zeros(len(rows), dtype=bool)
    partition, offset = rows.partition.to_numpy(), rows.offset.to_numpy()
    for p, (low, high) in topic_offsets.items():
        mask |= (partition == p) & (offset >= low) & (offset < high)
    return mask


def _offset_window(sent: pd.DataFrame, topic_offsets: dict[int, tuple[int, int]]) -> np.ndarray:
    """Mask over `sent`: acknowledged at partition p with low <= offset < high."""
    return _at_offsets(sent, topic_offsets) & sent.acked.to_numpy()


def _deleted(rows: pd.DataFrame, ranges: dict[int, tuple[int, int]], acked: pd.Index) -> np.ndarray:
    """Acknowledged records with a copy at [committed, log start) of some partition and none at or after the log
    start."""
    deleted = _at_offsets(rows, ranges)
    kept = rows.rid.to_numpy()[
        ~deleted & _at_offsets(rows, {p: (high, np.iinfo(np.int64).max) for p, (_, high) in ranges.items()})
    ]
    gone = pd.unique(rows.rid.to_numpy()[deleted])
    gone = gone[isin(gone, acked) & ~isin(gone, kept)]
    return gone


def shrinks(history: list[dict]) -> Iterator[tuple[dict, str, dict[int, tuple[int, int]]]]:
    """Every retention shrink's deleted ranges: (the stopped streamlet's consumer_position event, a topic it read,
    per partition [the position it had committed, the log start observed when it resumed))."""
    for stopped, resumed in _paired(history, CONSUMER_POSITION, LOG_START_OBSERVED):
        committed = _positions(stopped)
        log_start = {(row[0], int(row[1])): int(row[2]) for row in resumed.get("partitions", [])}
        for topic in sorted({t for t, _ in committed}):
            yield stopped, topic, {p: (o, log_start.get((t, p), o)) for (t, p), o in committed.items() if t == topic}


def retention_windows(
    evidence: Evidence, hops: list[HopData], lost: np.ndarray, gaps: list[str]
) -> tuple[list[RetentionWindow], np.ndarray]:
    """Every retention shrink, on the source or an intermediate topic, and the mask of `lost` it explains.

    The records at risk of an intermediate topic come from the run's recording of it (topics/<topic>.jsonl, from
    its first offset, whatever retention deleted since); the source's from the acknowledgement log's offsets."""
    explained = np.zeros(len(lost), dtype=bool)
    acked = pd.Index(evidence.sent.rid.to_numpy()[evidence.sent.acked.to_numpy()])
    windows = []
    for stopped, topic, ranges in shrinks(evidence.history):
        streamlet = stopped.get("streamlet")
        output = next((h for h in hops if h.producer == streamlet), None)
        if topic in evidence.topics:
            in_window = _deleted(evidence.topics[topic], ranges, acked)
            unrecorded = _missed(evidence.history, topic, ranges)
            if unrecorded:
                in_window = np.union1d(in_window, _placed(evidence, topic, unrecorded, lost))
        elif topic == evidence.source_topic:
            first = evidence.sent_to((topic,))
            in_window = first.rid.to_numpy()[_offset_window(first, ranges)]
        else:
            gaps.append(
                f"retention shrink of {topic} while {streamlet} was down: its records at risk were not recorded; "
                "losses there are not attributed"
            )
            continue
        reached = int(isin(in_window, output.rows.rid.to_numpy()).sum()) if output is not None else 0
        hit = isin(lost, in_window)
        explained |= hit
        windows.append(
            RetentionWindow(
                streamlet,
                topic,
                stopped["ts_ms"],
                len(in_window),
                reached,
                int(hit.sum()),
                int(hit.sum()) == len(in_window) - reached,
            )
        )
    return windows, explained


def placed_by_neighbours(history: list[dict]) -> dict[str, tuple[int, ...]]:
    """Per topic, the partitions where a retention shrink deleted offsets its recording missed: the records lost
    there are placed by the records written before and after them (_placed)."""
    found: dict[str, set[int]] = {}
    for _, topic, ranges in shrinks(history):
        found.setdefault(topic, set()).update(_missed(history, topic, ranges))
    return {topic: tuple(sorted(partitions)) for topic, partitions in found.items() if partitions}


def _missed(history: list[dict], topic: str, ranges: dict[int, tuple[int, int]]) -> dict[int, list[tuple[int, int]]]:
    """Per partition of `topic`, the offsets inside `ranges` that retention deleted before the run's recording
    of the topic reached them (history topics_recorded missed)."""
    missed: dict[int, list[tuple[int, int]]] = {}
    for event in history:
        if event["event"] != TOPICS_RECORDED:
            continue
        for row in event.get("missed") or []:
            if isinstance(row, list) and len(row) == 4 and row[0] == topic and int(row[1]) in ranges:
                low, high = ranges[int(row[1])]
                low, high = max(low, int(row[2])), min(high, int(row[3]))
                if low < high:
                    missed.setdefault(int(row[1]), []).append((low, high))
    return missed


def _placed(evidence: Evidence, topic: str, missed: dict[int, list[tuple[int, int]]], lost: np.ndarray) -> np.ndarray:
    """Of `lost`, the records absent from the recording of `topic` whose place in it is in a `missed` range.

    A streamlet writes the records of each input partition in their offset order, each key to one partition of
    its output: a record's first copy lies after the first copy of the record before it from the same source
    partition and before the first copy of the one after it. When the only offsets between those two that the
    recording did not see are ones retention deleted, that is where the record was."""
    rows = evidence.topics[topic]
    sent = evidence.sent_to((evidence.source_topic,))
    sent = sent[sent.acked.to_numpy() & (sent.offset.to_numpy() >= 0)].set_index("rid")
    first = rows.sort_values("offset", kind="stable").drop_duplicates("rid")
    first = first[isin(first.rid.to_numpy(), sent.index)]
    source = sent.loc[first.rid.to_numpy()]
    first = pd.DataFrame(
        {
            "partition": first.partition.to_numpy(),
            "offset": first.offset.to_numpy(),
            "from": source.partition.to_numpy(),
            "at": source.offset.to_numpy(),
        }
    )
    absent = lost[isin(lost, sent.index) & ~isin(lost, rows.rid.to_numpy())]
    candidates = sent.loc[absent]  # each absent record's source partition and offset
    origins, wheres = candidates.partition.to_numpy(), candidates["offset"].to_numpy()
    homes = key_homes(source.index.to_numpy(), first.partition.to_numpy(), absent)
    placed = []
    for (partition, origin), group in first.groupby(["partition", "from"]):
        if partition not in missed:
            continue
        group = group.sort_values("at")
        at, offsets = group["at"].to_numpy(), group.offset.to_numpy()
        mine = (origins == origin) & (homes == partition)
        for rid, where in zip(absent[mine], wheres[mine]):
            i = np.searchsorted(at, where)
            after = offsets[i - 1] + 1 if i > 0 else 0
            before = offsets[i] if i < len(offsets) else np.iinfo(np.int64).max
            if any(max(after, low) < min(before, high) for low, high in missed[partition]):
                placed.append(rid)
    return np.asarray(placed, dtype=lost.dtype)


def key_homes(present: np.ndarray, partitions: np.ndarray, absent: np.ndarray) -> np.ndarray:
    """The output partition each `absent` record's key went to around it: where the first copy of its key's nearest
    record before it (by seq) among the `present` ones went (`partitions`), else of the nearest after it; -1 with
    neither. A key's records go to one partition, until partitions are added (then the records around it tell)."""
    order = np.argsort(present, kind="stable")
    present, partitions = present[order], partitions[order]
    absent = np.asarray(absent, np.int64)
    homes = np.full(len(absent), -1, np.int64)
    at = np.searchsorted(present, absent)
    for i in (at, at - 1):  # the one after first, overwritten by the one before where there is one
        inside = (i >= 0) & (i < len(present))
        mine = inside & (absent >= 0)
        j = np.where(inside, i, 0)
        mine &= (present[j] >= 0) & (split_rid(present[j])[0] == split_rid(np.maximum(absent, 0))[0])
        homes[mine] = partitions[j[mine]]
    return homes


def _redeploy_explained(evidence: Evidence, spans: list[FaultSpan], lost: np.ndarray) -> np.ndarray:
    """Lost records a redeployed streamlet skipped: in its input (the source topic, or an intermediate
    topic's dump) after the position it had committed when stopped, and there before its new query's
    first batch (it started from `latest` or a later timestamp, so it never read them)."""
    explained = np.zeros(len(lost), dtype=bool)
    positions = [e for e in evidence.history if e["event"] == CONSUMER_POSITION]
    for span in spans:
        if not span.params.get("skips_to") or span.restart_ms is None:
            continue
        stopped = next(
            (e for e in positions if e.get("streamlet") == span.target and e["ts_ms"] >= span.start_ms), None
        )
        events = evidence.progress.get(span.target) or []
        resumed = next(
            (e["ts_ms"] for e in events if e.get("event") == QUERY_PROGRESS and e["ts_ms"] > span.restart_ms), None
        )
        if stopped is None or resumed is None:
            continue
        committed = _positions(stopped)

        def after_position(topic: str) -> dict[int, tuple[int, int]]:
            return {p: (o, np.iinfo(np.int64).max) for (t, p), o in committed.items() if t == topic}

        sent = evidence.sent_to((evidence.source_topic,))
        skipped = [
            sent.rid.to_numpy()[
                _offset_window(sent, after_position(evidence.source_topic)) & (sent.event_time_ms.to_numpy() <= resumed)
            ]
        ]
        skipped += [
            rows.rid.to_numpy()[_at_offsets(rows, after_position(topic)) & (rows.timestamp_ms.to_numpy() <= resumed)]
            for topic, rows in evidence.topics.items()
        ]
        explained |= isin(lost, np.concatenate(skipped))
    return explained


def _recreations(evidence: Evidence) -> list[Recreation]:
    """The source topic's re-creations, in order."""
    return recreations(evidence.history, evidence.source_topic)


def source_eras(sent: pd.DataFrame, made: list[Recreation]) -> np.ndarray:
    """Per row of `sent`: which topic holds it, 0 for the first and k for the one the k-th re-creation made
    (harness/checker/eras.py tells them by send order; a record not acknowledged stays 0)."""
    era = np.zeros(len(sent), dtype=np.int64)
    if made:
        rows = np.flatnonzero(sent.acked.to_numpy())
        columns = (sent[c].to_numpy()[rows] for c in ("partition", "offset", "event_time_ms"))
        era[rows] = eras_of(*columns, made)
    return era


def era_windows(made: list[Recreation]) -> list[tuple[float, float]]:
    """Per topic era (source_eras), the times its offsets were observed alone: from its creation to the next
    deletion."""
    starts = [-np.inf] + [r.created_ms for r in made]
    ends = [r.deleted_ms for r in made] + [np.inf]
    return list(zip(starts, ends))


def _recreated_explained(evidence: Evidence, lost: np.ndarray) -> np.ndarray:
    """Mask over `lost`: source records a topic re-creation made the streamlet reading it skip, the old topic's and
    the new one's told apart by source_eras (the new topic's offsets start at 0 again). Late events (their send time
    set back) are left to the watermark cause."""
    explained = np.zeros(len(lost), dtype=bool)
    sent = evidence.sent_to((evidence.source_topic,))
    made = _recreations(evidence)
    if not made:
        return explained
    era = source_eras(sent, made)
    lowest, highest = _offset_bounds(sent, era)
    # the places each record can be at, made once: _at_offsets reads only these two columns
    at_lowest, at_highest = (pd.DataFrame({"partition": sent.partition, "offset": o}) for o in (lowest, highest))
    acked, never = sent.acked.to_numpy(), np.iinfo(np.int64).max
    for k, recreation in enumerate(made, start=1):
        read_to = recreation.read_to
        events = evidence.progress.get(recreation.streamlet) or []
        skipped_to = _offsets_after_going_back(events, evidence.source_topic, read_to, recreation.created_ms)
        skipped_to |= _carried_on(events, evidence.source_topic, read_to, skipped_to, recreation.created_ms)
        old, new = acked & (era == k - 1), acked & (era == k)
        unread = old & _at_offsets(at_lowest, {p: (o, never) for p, o in read_to.items()})
        skipped = new & _at_offsets(at_highest, {p: (0, o) for p, o in skipped_to.items()})
        reached = new & _at_offsets(sent, {p: (o, never) for p, o in read_to.items()})
        short = np.zeros(len(sent), dtype=bool)
        for ranges in _read_short(events, evidence.source_topic, recreation.created_ms):
            short |= new & _at_offsets(at_lowest, ranges)
        explained |= isin(
            lost,
            sent.rid.to_numpy()[
                (unread | skipped | short | _replaced(sent, unread, reached, lost)) & ~sent.late.to_numpy()
            ],
        )
    return explained


def _read_short(events: list[dict], topic: str, after_ms: int) -> list[dict[int, tuple[int, int]]]:
    """Per batch that finished after `after_ms` and read fewer of `topic`'s records than its offsets span, its offset
    ranges per partition. A batch planned to the deleted topic's ends (the offsets Spark knew) reads the new topic's
    shorter log, and skips the offsets it finds missing: the new records written there afterwards are never read.
    (Seen on a loaded machine: a batch planned from 234/244 to 1123/1104 read 1,105 records.)"""
    found = []
    for event in events:
        if event.get("event") != QUERY_PROGRESS or event["ts_ms"] <= after_ms:
            continue
        for source in event["progress"].get("sources", []):
            start = source_offsets(source.get("startOffset")).get(topic) or {}
            end = source_offsets(source.get("endOffset")).get(topic) or {}
            rows = source.get("numInputRows")
            ranges = {int(p): (int(start[p]), int(o)) for p, o in end.items() if p in start and int(o) > int(start[p])}
            if rows is not None and int(rows) < sum(high - low for low, high in ranges.values()):
                found.append(ranges)
    return found


def _offset_bounds(sent: pd.DataFrame, era: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of `sent`: the lowest and highest offset it can be at. A record acknowledged without an offset lies,
    in its partition and topic, above the offsets acknowledged before it and below those acknowledged after it (send
    order, the idempotent producer's write order); with none on a side, that side is open (-1: none below 0)."""
    offset = sent.offset.to_numpy()
    known = sent.offset.where(sent.acked.to_numpy() & (offset >= 0)).astype(float)
    groups = [sent.partition.to_numpy(), era]
    before = known.groupby(groups).cummax().groupby(groups).ffill().groupby(groups).shift()
    after = known[::-1].groupby([g[::-1] for g in groups]).cummin().groupby([g[::-1] for g in groups]).ffill()
    after = after.groupby([g[::-1] for g in groups]).shift()[::-1]
    placeless = offset < 0
    lowest = np.where(placeless, before.fillna(-1).to_numpy() + 1, offset).astype(np.int64)
    highest = np.where(placeless, after.fillna(2.0**62).to_numpy() - 1, offset).astype(np.int64)
    return lowest, highest


def _replaced(sent: pd.DataFrame, unread: np.ndarray, reached: np.ndarray, lost: np.ndarray) -> np.ndarray:
    """Mask over `sent`: new-topic records (`reached`: at offsets the old topic's unread records had) whose offset
    was served with the deleted topic's record instead.

    Spark's cached consumer keeps records it fetched past the batch that read them; when the re-created topic
    reaches those offsets again, it hands out the deleted topic's records from that buffer. Seen here: the old
    record at (partition, offset), unread at the deletion, arrives all the same, and the new one there is lost."""
    arrived_old = unread & ~isin(sent.rid.to_numpy(), lost)
    served = pd.MultiIndex.from_arrays([sent.partition.to_numpy()[arrived_old], sent.offset.to_numpy()[arrived_old]])
    at_served = pd.MultiIndex.from_arrays([sent.partition.to_numpy(), sent.offset.to_numpy()]).isin(served)
    return reached & at_served


def _offsets_after_going_back(events: list[dict], topic: str, read_to: dict[int, int], after_ms: int) -> dict[int, int]:
    """Per partition, the end offset of the first batch after `after_ms` that ended below `read_to`: where the
    query carried on from in the new topic."""
    ends = committed_ends(events, [topic])
    ends = ends[ends.ts > after_ms].sort_values("ts", kind="stable")
    went_back = ends[ends.committed < ends.partition.map(read_to).fillna(-1)]
    return {int(p): int(group.committed.iloc[0]) for p, group in went_back.groupby("partition")}


def _carried_on(
    events: list[dict], topic: str, read_to: dict[int, int], went_back: dict[int, int], after_ms: int
) -> dict[int, int]:
    """Per partition where no batch after `after_ms` went back, `read_to` when a batch after it ended at or above
    it: the query carried on from its old position in the new topic, so it never read the new topic's offsets
    below that position (they were written before its next batch)."""
    ends = committed_ends(events, [topic])
    ends = ends[ends.ts > after_ms]
    return {p: o for p, o in read_to.items() if p not in went_back and (ends[ends.partition == p].committed >= o).any()}


def _deleted_before_read(
    evidence: Evidence, hops: list[HopData], lost: np.ndarray, first_hop: np.ndarray
) -> np.ndarray:
    """Mask over `lost`: records retention deleted from the input of the streamlet that lost them before that
    streamlet had read past them: it never received them, and the sampled log start of their partition passed
    their offset before any of its committed batches ended beyond it (or it never got that far). A re-created source
    topic's offsets are of two topics: a record is compared with what was observed of its own (source_eras). A record
    acknowledged without an offset (acks.csv leaves it empty) cannot be shown below anything."""
    explained = np.zeros(len(lost), dtype=bool)
    samples = offset_samples(evidence.history)
    if samples.empty or not len(lost):
        return explained
    first = evidence.sent_to((evidence.source_topic,))  # a later source topic's offsets are not sampled here
    acked = first.acked.to_numpy()
    made = _recreations(evidence)
    acked_source = first[acked].assign(era=source_eras(first, made)[acked])
    windows = era_windows(made)
    for index, hop in enumerate(hops):
        here = first_hop == index
        if not here.any():
            continue
        topic = hop.upstream or evidence.source_topic
        rows = evidence.topics.get(topic) if hop.upstream else acked_source
        if rows is None:
            continue
        lost_here = lost[here]
        # An egress receives a batch (its audit) before it stores it: a record it received and did not keep counts
        # only when the driver that received it died before that batch committed, so the replay had to read it again.
        received = (
            hop.rows[isin(hop.rows.rid.to_numpy(), lost_here)].groupby("rid").time_ms.max()
            if hop.kind == EGRESS
            else None
        )
        deaths = _driver_deaths(evidence.history, hop.producer) if received is not None else None
        candidates = rows[isin(rows.rid.to_numpy(), lost_here) & (rows.offset.to_numpy() >= 0)]
        if "era" not in candidates:
            candidates = candidates.assign(era=0)
        read = committed_ends(evidence.progress.get(hop.producer) or [], [topic])
        deleted = []
        for (partition, era), group in candidates.groupby(["partition", "era"]):
            offsets = group.offset.to_numpy()
            observed = samples[(samples.topic == topic) & (samples.partition == partition)]
            batches = read[read.partition == partition]
            if made and not hop.upstream:
                observed, batches = _of_era(observed, windows[era]), _of_era(batches, windows[era])
            # Sampled once a second, a deletion is known to within a sample: the record was last seen retained at
            # `retained_until` and gone at the next sample. It counts when it was not seen retained after the batch
            # that should have read it had ended.
            retained_until, deleted_at = _passing(observed, "log_start", offsets)
            _, read_at = _passing(batches, "committed", offsets)
            gone_unread = np.isfinite(deleted_at) & (retained_until < read_at)
            if received is not None:
                gone_unread &= _unreceived_or_replayed(
                    received.reindex(group.rid.to_numpy()).to_numpy(dtype=float), deaths, read_at
                )
            deleted.append(group.rid.to_numpy()[gone_unread])
        if deleted:
            explained |= here & isin(lost, np.concatenate(deleted))
    return explained


def _of_era(series: pd.DataFrame, window: tuple[float, float]) -> pd.DataFrame:
    """The rows of a per-partition series (samples or batch ends) taken while one topic era stood alone; after a
    re-creation, from the first sample whose log end went back (an earlier one may still be the deleted topic's)."""
    start, end = window
    series = series[(series.ts >= start) & (series.ts < end)]
    if np.isfinite(start) and "log_end" in series and len(series):
        fresh = series.log_end.to_numpy() < np.maximum.accumulate(series.log_end.to_numpy())
        series = series.iloc[np.argmax(fresh) :] if fresh.any() else series
    return series


def _unreceived_or_replayed(received_at: np.ndarray, deaths: np.ndarray, read_at: np.ndarray) -> np.ndarray:
    """Per record: never received (NaN), or received by a driver that died (`deaths`, sorted) before a later
    batch, the replay, committed past it at `read_at`."""
    next_death = np.append(deaths, np.inf)[np.searchsorted(deaths, received_at, side="left")]
    return np.isnan(received_at) | ((next_death < read_at) & np.isfinite(read_at))


def _driver_deaths(history: list[dict], streamlet: str) -> np.ndarray:
    """When the streamlet's drivers ended (killed, exited or stopped), sorted."""
    process = f"streamlet-{streamlet}"
    return np.sort(
        np.array(
            [
                e["ts_ms"]
                for e in history
                if e.get("process") == process and e["event"] in (PROCESS_KILLED, PROCESS_EXITED, PROCESS_STOPPED)
            ],
            dtype=float,
        )
    )


def _passing(series: pd.DataFrame, column: str, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per offset, for `column` (a per-partition offset over time, sampled): the last sample time at which it had
    not passed the offset yet (-inf: not even the first), and the first at which it had (+inf: never)."""
    if series.empty:
        return np.full(len(offsets), -np.inf), np.full(len(offsets), np.inf)
    series = series.sort_values("ts")
    highest = np.maximum.accumulate(series[column].to_numpy())
    first = np.searchsorted(highest, offsets, side="right")
    times = np.concatenate([[-np.inf], series.ts.to_numpy().astype(float), [np.inf]])
    return times[first], times[first + 1]


def _uses_watermark(evidence: Evidence) -> bool:
    return any(s.drops_late_events for s in evidence.streamlets)


def lost_causes(
    evidence: Evidence,
    hops: list[HopData],
    lost: np.ndarray,
    first_hop: np.ndarray,
    spans: list[FaultSpan],
    gaps: list[str],
) -> tuple[np.ndarray, list[RetentionWindow]]:
    """One cause per lost rid (harness.semantics.LOST_CAUSES), and the retention windows seen."""
    cause = np.full(len(lost), "unexplained", dtype=object)
    windows, by_retention = retention_windows(evidence, hops, lost, gaps)
    by_recreation = _recreated_explained(evidence, lost)
    # Log starts sampled around a re-creation are of two topics (the deleted one's, then the new one's from 0):
    # what the re-creation explains is not routine retention's.
    by_retention |= _deleted_before_read(evidence, hops, lost, first_hop) & ~by_recreation
    by_redeploy = _redeploy_explained(evidence, spans, lost)
    by_truncation = _truncated(evidence, lost)
    late = (
        isin(lost, evidence.sent.rid[evidence.sent.late.to_numpy()])
        if _uses_watermark(evidence)
        else np.zeros(len(lost), bool)
    )
    failed = {e.get("streamlet") for e in evidence.history if e["event"] == QUERY_FAILED}
    # The output of a failed streamlet is where its losses first show (of an application, the outputs it writes).
    after_failed = np.array([bool(_writers(evidence, hop.producer) & failed) for hop in hops] or [False])
    by_failure = after_failed[first_hop] if len(hops) else np.zeros(len(lost), bool)
    for name, mask in reversed(
        [
            ("leader_truncated", by_truncation),
            ("retention", by_retention),
            ("redeploy", by_redeploy),
            ("topic_recreated", by_recreation),
            ("watermark", late),
            ("query_failed", by_failure),
        ]
    ):
        cause[mask] = name
    return cause, windows


def _truncated(evidence: Evidence, lost: np.ndarray) -> np.ndarray:
    """Mask over `lost`: records acknowledged at an offset of their source topic that was acknowledged again to
    another record (the acknowledgement log read again at their places: the evidence may hold only the records a
    check selected). Not where the source topic was re-created: its new topic gives its offsets again."""
    sent = evidence.sent
    rows = sent[sent.acked.to_numpy() & (sent.offset.to_numpy() >= 0) & isin(sent.rid.to_numpy(), lost)]
    if rows.empty or _recreations(evidence):
        return np.zeros(len(lost), bool)
    places = (rows.partition.to_numpy().astype(np.int64) << PLACE_BITS) | rows.offset.to_numpy().astype(np.int64)
    found = acked_at(RunLayout(evidence.root).written_ack_log, places)
    topics = evidence.pipeline.source_topics
    prefixes = tuple(evidence.pipeline.source_keys.get(t, "") for t in topics) if len(topics) > 1 else ("",)

    def topic_of(keys) -> list[int]:  # a key's source topic, told by its prefix (one topic: all keys)
        return [next((i for i, p in enumerate(prefixes) if str(k).startswith(p)), -1) for k in keys]

    found = found.drop_duplicates(["key", "seq", "partition", "offset"])
    told = pd.Series(list(zip(topic_of(found.key), found.partition, found.offset))).value_counts()
    again = set(told.index[told.to_numpy() > 1])
    places_of = zip(topic_of(evidence.keys[rows.key.to_numpy()]), rows.partition.tolist(), rows.offset.tolist())
    mask = np.array([place in again for place in places_of], bool)
    return isin(lost, rows.rid.to_numpy()[mask])


def _writers(evidence: Evidence, producer: str) -> set[str]:
    """The streamlets whose driver writes a hop: its producer, or, an output the harness reads (no driver of its
    own), the application writing it."""
    output = next((s for s in evidence.pipeline.streamlets if s.name == producer and s.kind in OUTPUT_KINDS), None)
    if output is None:
        return {producer}
    producers = {topic: s.name for s in evidence.pipeline.streamlets for topic in s.outputs}
    return {producer, *([output.written_by] if output.written_by else []), *(producers.get(t) for t in output.inputs)}


# per missing record, why (LOST_CAUSES, or "unexplained"; "unknown" where this step could not run)
CAUSE_OF_MISSING: Key[np.ndarray] = Key("cause_of_missing", lambda: np.array([], object))
# per retention shrink: its window, lost in it, reached on
RETENTION: Key[list[dict]] = Key("retention", list, reported=True)


def _causes(context: Context) -> dict:
    cause, windows = lost_causes(
        context.evidence, context[HOPS], context[MISSING], context[MISSING_FIRST], context.spans, context.gaps
    )
    return {CAUSE_OF_MISSING: cause, RETENTION: [w.__dict__ for w in windows]}


def _causes_unknown(context: Context) -> dict:
    return {CAUSE_OF_MISSING: np.full(len(context[MISSING]), "unknown", dtype=object)}


STEP = Step(
    "causes",
    _causes,
    writes=(CAUSE_OF_MISSING, RETENTION),
    needs=(HOPS, MISSING, MISSING_FIRST),
    unknown=_causes_unknown,
)
