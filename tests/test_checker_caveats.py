"""What the checker makes of three caveats' evidence, on synthetic runs whose expected counts come from the indices
used to build them: a source topic deleted and re-created (offsets start again), a transactional producer that
aborted transactions (copies on the source that a read_uncommitted reader sees), and record headers."""

from __future__ import annotations

import json
import random

import numpy as np
import pandas as pd
from hypothesis import example, given, settings
from hypothesis import strategies as st

from harness.checker.anomaly_records import RECORDS, WITNESSES
from harness.checker.causes import source_eras
from harness.checker.check import check_run, judged_from_notable
from harness.checker.counts import CAUSES, COUNTS, HOP_FINDINGS, VERDICT
from harness.checker.eras import Recreation
from harness.checker.expect import EXPECTATIONS
from harness.checker.load import load_evidence
from harness.checker.selection import Selection
from harness.checker.witnesses import spread
from tests.synthetic_run import T0, Flow, clean_flow, make_sent, write_run


def _progress(ts: int, end: int) -> dict:
    return {
        "ts_ms": ts,
        "event": "progress",
        "query": "main",
        "progress": {"batchId": 0, "numInputRows": 1, "sources": [{"endOffset": {"source": {"0": end, "1": end}}}]},
    }


DELETED_MS, CREATED_MS = T0 + 250, T0 + 260


def _recreated_source():
    """100 records, 25 per partition in the old topic (sent before the deletion), 25 in the new one (offsets from
    0): the records, and which of them the new topic holds."""
    sent = make_sent(4, 25)
    new = sent.event_time_ms >= DELETED_MS
    for p in (0, 1):
        here = new & (sent.partition == p)
        sent.offset[here] = np.arange(here.sum())
    return sent, new


def _judge_recreation(tmp_path, sent, lost, samples=(), ends=(20, 8, 25), progress=None):
    """The ingress had committed offset 20 when the topic went; its first batch after the re-creation ended at 8
    (`ends`: its batches' end offsets, before the deletion and after the re-creation; `progress`: its events
    instead). Judged by default (the dense engine counts, the records the causes read are loaded: eras.py), and
    that report is the one the whole evidence in memory gives."""
    keep = np.flatnonzero(~lost)
    history = [
        {
            "ts_ms": CREATED_MS,
            "event": "topic_recreated",
            "streamlet": "ingress",
            "topics": ["source"],
            "deleted_ms": DELETED_MS,
            "created_ms": CREATED_MS,
            "read_to": [["source", 0, 20], ["source", 1, 20]],
        },
        *samples,
    ]
    root = write_run(
        tmp_path / "run",
        sent,
        Flow({"ingested": keep, "processed": keep}, keep, keep),
        history=history,
        progress={"ingress": progress or [_progress(ts, end) for ts, end in zip((T0 + 100, T0 + 300, T0 + 600), ends)]},
        recordings="columnar",
    )
    assert judged_from_notable(load_evidence(root, Selection.nothing()), complete=True)
    report = check_run(root, strict=True)
    assert json.dumps(report.to_dict(), default=str) == json.dumps(check_run(root, engine=None).to_dict(), default=str)
    return report


def test_a_recreated_source_topic_explains_what_the_ingress_skipped_in_the_old_topic_and_the_new(tmp_path):
    """Lost: the old topic's offsets 20-24 and the new one's 0-7 (re-creation), and one record at offset 15 of the
    new topic, which the ingress read past normally (unexplained)."""
    sent, new = _recreated_source()
    old_unread = ~new & (sent.offset >= 20)
    new_skipped = new & (sent.offset < 8)
    unexplained = new & (sent.partition == 0) & (sent.offset == 15)
    assert old_unread.sum() == 10 and new_skipped.sum() == 16 and unexplained.sum() == 1
    report = _judge_recreation(tmp_path, sent, old_unread | new_skipped | unexplained)
    assert report[COUNTS].lost == 27
    assert report[CAUSES]["lost"]["topic_recreated"] == 26
    assert report[CAUSES]["lost"]["unexplained"] == 1
    assert report[VERDICT] == "at-most-once"


def test_an_ingress_that_carried_on_from_its_old_position_jumped_over_the_new_topics_lower_offsets(tmp_path):
    """No batch went back: the new topic already held offsets past 20 when the ingress's next batch ran, so it
    read on from 20 and never read the new topic's offsets 0-19 (the re-creation's); a record lost at offset 22,
    which it read past normally, stays unexplained."""
    sent, new = _recreated_source()
    old_unread = ~new & (sent.offset >= 20)
    jumped = new & (sent.offset < 20)
    unexplained = new & (sent.partition == 1) & (sent.offset == 22)
    assert old_unread.sum() == 10 and jumped.sum() == 40 and unexplained.sum() == 1
    report = _judge_recreation(tmp_path, sent, old_unread | jumped | unexplained, ends=(20, 23, 25))
    assert report[COUNTS].lost == 51
    assert report[CAUSES]["lost"]["topic_recreated"] == 50 and report[CAUSES]["lost"]["unexplained"] == 1


def test_a_batch_planned_to_the_deleted_topics_ends_skips_what_the_new_topic_wrote_there_after_it_read(tmp_path):
    """After the re-creation the ingress's batch was planned from 20 to 25, the old topic's ends, and read the new
    topic when it held offsets up to 21 only: 4 records of the 10 its offsets span. The new records at 22-24, written
    after it read, were never read: the re-creation's losses (a loaded CI run lost 629 so). A batch that read all
    it spanned explains none of them."""
    sent, new = _recreated_source()
    old_unread = ~new & (sent.offset >= 20)
    jumped = new & (sent.offset < 20)
    after_it_read = new & (sent.offset >= 22)
    assert after_it_read.sum() == 6

    def progress(rows: int) -> list[dict]:
        span = {"source": {"0": 25, "1": 25}}
        planned = _progress(T0 + 300, 25)
        planned["progress"] = {
            "batchId": 1,
            "numInputRows": rows,
            "sources": [{"startOffset": {"source": {"0": 20, "1": 20}}, "endOffset": span, "numInputRows": rows}],
        }
        return [_progress(T0 + 100, 20), planned]

    for rows, recreated in ((4, 56), (10, 50)):
        report = _judge_recreation(
            tmp_path / str(rows), sent, old_unread | jumped | after_it_read, progress=progress(rows)
        )
        assert report[COUNTS].lost == 56 and report[CAUSES]["lost"]["topic_recreated"] == recreated, rows
        assert report[CAUSES]["lost"]["unexplained"] == 56 - recreated


def test_records_sent_before_the_deletion_that_a_retry_wrote_to_the_new_topic_are_the_recreations(tmp_path):
    """The first two records of partition 0 in the new topic were sent just before the deletion: the producer
    retried them once the topic was back (what a CI run's two losses outside every rule most likely were). Their
    send time says old topic, their offsets (lower than those acknowledged before them) say new: skipped with the
    new topic's first offsets, they are the re-creation's losses, not unexplained ones."""
    sent, new = _recreated_source()
    retried = new & (sent.partition == 0) & (sent.offset < 2)
    sent.event_time_ms[retried] = DELETED_MS - 1
    old_unread = ~new & (sent.offset >= 20)
    new_skipped = new & (sent.offset < 8)
    report = _judge_recreation(tmp_path, sent, old_unread | new_skipped)
    assert report[COUNTS].lost == 26 and report[CAUSES]["lost"]["topic_recreated"] == 26, report[CAUSES]["lost"]
    assert report[CAUSES]["lost"]["unexplained"] == 0


def test_log_starts_sampled_around_the_recreation_do_not_turn_its_losses_into_retentions(tmp_path):
    """The offset sampler saw the deleted topic's partition 0 start at 23 while it went (CI runs' evidence had such
    a sample): the old topic's unread offsets 20-22 there are still the re-creation's, not retention's; and the new
    topic's record at offset 21 of partition 0, lost although the ingress read past it after the re-creation, is
    compared with the new topic's samples alone: unexplained, not retention (two CI runs called such a loss
    retention)."""
    sent, new = _recreated_source()
    old_unread = ~new & (sent.offset >= 20)
    new_skipped = new & (sent.offset < 8)
    unexplained = new & (sent.partition == 0) & (sent.offset == 21)
    samples = [
        {"ts_ms": T0 + ts, "event": "offsets", "partitions": [["source", 0, start, 25], ["source", 1, 0, 25]]}
        for ts, start in ((240, 0), (255, 23), (270, 0))
    ]
    report = _judge_recreation(tmp_path, sent, old_unread | new_skipped | unexplained, samples)
    assert report[COUNTS].lost == 27 and report[CAUSES]["lost"]["topic_recreated"] == 26
    assert report[CAUSES]["lost"]["retention"] == 0 and report[CAUSES]["lost"]["unexplained"] == 1


def test_records_the_broker_still_wrote_to_the_deleted_topic_after_the_re_creation_are_its_losses(tmp_path):
    """Partition 0's first three records sent after the deletion (the last one after the topic was created again)
    still went to the old topic, at offsets 25-27 after its other records: the send order of the ack log, where the
    offsets go back only at the fourth, says which topic holds each. Unread there, they are the re-creation's
    losses, whatever their send time."""
    sent, new = _recreated_source()
    late_old = np.flatnonzero(new & (sent.partition == 0))[:3]
    assert sent.event_time_ms[late_old[-1]] > CREATED_MS
    sent.offset[late_old] = [25, 26, 27]
    rest = new & (sent.partition == 0)
    rest[late_old] = False
    sent.offset[rest] = np.arange(rest.sum())
    new[late_old] = False
    old_unread = ~new & (sent.offset >= 20)
    new_skipped = new & (sent.offset < 8)
    report = _judge_recreation(tmp_path, sent, old_unread | new_skipped)
    assert report[COUNTS].lost == 13 + 16
    assert report[CAUSES]["lost"]["topic_recreated"] == 29, report[CAUSES]["lost"]


def test_a_record_acknowledged_without_an_offset_is_placed_by_its_neighbours_in_send_order(tmp_path):
    """librdkafka reported two old-topic records of partition 0 delivered without an offset (a CI run had one, as
    the topic was deleted). The one after offset 21 lies above it, so at or above the ingress's committed 20: unread,
    the re-creation's. The one after offset 9 could be anywhere above 9, below 20 too: lost, it stays unexplained."""
    sent, new = _recreated_source()
    p0_old = ~new & (sent.partition == 0)
    above, below = np.flatnonzero(p0_old & (sent.offset == 22))[0], np.flatnonzero(p0_old & (sent.offset == 10))[0]
    sent.offset[[above, below]] = -1
    old_unread = ~new & (sent.offset >= 20)
    new_skipped = new & (sent.offset < 8)
    lost = old_unread | new_skipped
    lost[[above, below]] = True
    report = _judge_recreation(tmp_path, sent, lost)
    assert report[COUNTS].lost == 26 + 1
    assert report[CAUSES]["lost"]["topic_recreated"] == 26 and report[CAUSES]["lost"]["unexplained"] == 1


RECREATED_PARTITIONS = st.integers(1, 2).flatmap(
    lambda n: st.lists(
        st.tuples(
            st.lists(st.integers(1, 20), min_size=n, max_size=n),
            st.integers(0, 20),
            st.integers(-3, 3),
            st.integers(0, 40),
        ),
        min_size=1,
        max_size=3,
    )
)


@settings(max_examples=300, deadline=None)
@given(RECREATED_PARTITIONS, st.randoms(use_true_random=False))
@example([([5], 1, 2, 0)], random.Random(1))  # the new topic's first offset equals the old one's last
def test_every_acknowledged_record_is_placed_in_the_topic_that_holds_it(partitions, rng):
    """Per partition: `first` records in the first topic (offsets from `base`), then those of each topic a
    re-creation made (`later`: how many in each, offsets from 0), in send order. The partitions' records interleave
    at random, as the producer sends them, a few unknown ones (no partition, no offset) among them, and the first
    deletion falls `shift` records off partition 0's boundary (a retry wrote records sent before it to the new topic,
    or the broker still took records sent after it into the old one). Whatever the mix, each acknowledged record is
    placed in the topic that holds it; a partition with nothing in its first topic is placed by send time, and
    left out when re-created twice (its first offset going back is the second re-creation's, which nothing tells)."""
    queues = [
        [(p, base + i, 0) for i in range(first)] + [(p, i, k) for k, n in enumerate(later, 1) for i in range(n)]
        for p, (later, first, _, base) in enumerate(partitions)
    ]
    order = [p for p, queue in enumerate(queues) for _ in queue]
    rng.shuffle(order)
    rows = []  # partition, offset, acked, the topic that holds it
    for p in order:
        partition, offset, topic = queues[p].pop(0)
        rows.append((partition, offset, True, topic))
        if rng.random() < 0.05:
            rows.append((-1, -1, False, 0))
    sent = pd.DataFrame(rows, columns=["partition", "offset", "acked", "topic"]).assign(
        event_time_ms=T0 + np.arange(len(rows)) * 10
    )
    zero = sent[sent.partition == 0]
    later, first, shift, _ = partitions[0]
    boundaries = [min(max(first + shift, 0), len(zero) - 1)] + list(np.cumsum([first] + later)[1:-1])
    deleted = [int(zero.event_time_ms.iloc[b]) for b in boundaries]
    placed = source_eras(sent, [Recreation(d, d + 5, "ingress", {}) for d in deleted])
    expected = sent.topic.to_numpy().copy()
    # A partition whose first topic held nothing shows no offset going back there: split at the deletion by send time.
    for p, (later, first, *_) in enumerate(partitions):
        if first == 0 and len(later) == 1:
            mine = (sent.partition == p).to_numpy()
            expected[mine] = sent.event_time_ms.to_numpy()[mine] >= deleted[0]
    settled = np.array([first > 0 or len(later) == 1 for later, first, *_ in partitions])[sent.partition.clip(0)]
    acked = sent.acked.to_numpy() & settled
    assert (placed[acked] == expected[acked]).all()


def test_a_new_topics_record_served_with_the_deleted_topics_record_at_its_offset_is_lost_to_the_recreation(tmp_path):
    """As above, but Spark's cached consumer handed out the deleted topic's partition-1 records at offsets 20-22
    (unread at the deletion) when the new topic reached those offsets: the old ones arrived, the new ones there
    are lost, and the re-creation explains them. The new record at offset 24 of partition 1 is lost while the old
    one there was not delivered either: nothing took its place, so it stays unexplained, as does offset 15 of
    partition 0 (its old twin was read before the deletion)."""
    sent, new = _recreated_source()
    p1 = sent.partition == 1
    served_old = ~new & p1 & (sent.offset >= 20) & (sent.offset <= 22)
    old_unread = ~new & (sent.offset >= 20) & ~served_old
    new_skipped = new & (sent.offset < 8)
    replaced = new & p1 & (sent.offset >= 20) & (sent.offset <= 22)
    unexplained = new & ((~p1 & (sent.offset == 15)) | (p1 & (sent.offset == 24)))
    assert served_old.sum() == 3 and old_unread.sum() == 7 and replaced.sum() == 3 and unexplained.sum() == 2
    report = _judge_recreation(tmp_path, sent, old_unread | new_skipped | replaced | unexplained)
    assert report[COUNTS].lost == 7 + 16 + 3 + 2
    assert report[CAUSES]["lost"]["topic_recreated"] == 7 + 16 + 3
    assert report[CAUSES]["lost"]["unexplained"] == 2


def test_copies_read_from_aborted_transactions_are_inherited_from_the_source_not_unexplained_replays(tmp_path):
    """Records 0-4 were written once in a transaction the producer aborted, then again (committed): the ack log
    has an aborted line and an acked line for each. A read_uncommitted ingress reads both copies, and every hop
    after it passes both on: extra copies the source had, made by no batch."""
    sent = make_sent(2, 20)
    every = np.arange(len(sent))
    twice = np.concatenate([every, np.arange(5)])
    root = write_run(tmp_path / "run", sent, Flow({"ingested": twice, "processed": twice}, twice, every))
    with open(root / "acks.csv", "a") as acks:
        for i in range(5):
            acks.write(
                f"k{sent.key[i]:04d},{sent.seq[i]},{sent.event_time_ms[i]},0,aborted,{sent.partition[i]},{100 + i}\n"
            )
    report = check_run(root)
    assert report.gaps == []  # an aborted line is not a record logged twice
    assert report[COUNTS].acked == len(sent) and report[COUNTS].lost == 0
    assert report[COUNTS].duplicated_deliveries == 5 and report[COUNTS].duplicated_in_state == 0
    assert report[CAUSES]["duplicated"] == {
        "replay_after_fault": 0,
        "unexplained": 0,
        "aborted_read": 5,
        "resent_read": 0,
        "retried_read": 0,
        "producer_retry": 0,
    }
    ingested = next(h for h in report[HOP_FINDINGS] if h.name == "ingested")
    assert ingested.copies.made_here == 0 and ingested.copies.inherited == 5
    assert report[VERDICT] == "effectively-exactly-once"


def test_copies_the_source_re_sent_are_read_from_it_unless_the_job_declares_it_deduplicates(tmp_path):
    """Records 0-5 were sent twice on purpose (the resend fault: a second acked line, resend 1). A job that passes
    both copies on: without a declaration they are the source's copies (resent_read); declared deduplicating, the
    copies it wrote are its own (made at its hop: its deduplication failed). A job that dropped them: no copy."""
    sent = make_sent(2, 20)
    sent.resent = np.zeros(len(sent), np.int64)
    sent.resent[:6] = 1
    every = np.arange(len(sent))
    twice = np.concatenate([every, np.arange(6)])
    passed = Flow({"ingested": twice, "processed": twice}, twice, every)
    for declared, read, made in [(None, 6, 0), (30.0, 0, 6)]:
        report = check_run(write_run(tmp_path / f"passed-{declared}", sent, passed, ingress_deduplicates_s=declared))
        assert report.gaps == [] and report[COUNTS].acked == len(sent)  # a resend's line is not a record logged twice
        assert report[COUNTS].duplicated_deliveries == 6 and report[COUNTS].lost == 0
        assert (report[CAUSES]["duplicated"]["resent_read"], report[CAUSES]["duplicated"]["unexplained"]) == (
            read,
            made,
        )
        ingested = next(h for h in report[HOP_FINDINGS] if h.name == "ingested")
        assert (ingested.copies.inherited, ingested.copies.made_here) == (read, made)
        duplicated = report[RECORDS]["duplicated"]  # anomalies/duplicated.csv: where each one's copy came from
        assert list(duplicated.columns[-3:]) == ["first_hop", "fault", "cause"]
        assert set(duplicated.first_hop) == {"ingested"} and duplicated.fault.isna().all()
        assert set(duplicated.cause) == {"resent_read" if declared is None else "unexplained"}
        if declared is None:  # report.json's witnesses give the cause duplicated.csv gives
            assert {w.cause for w in report[WITNESSES] if w.anomaly == "duplicated_deliveries"} == {"resent_read"}
    absorbed = check_run(write_run(tmp_path / "absorbed", sent, clean_flow(sent), ingress_deduplicates_s=30.0))
    assert absorbed[VERDICT] == "exactly-once" and absorbed[CAUSES]["duplicated"]["resent_read"] == 0


def test_witnesses_are_drawn_across_what_made_them_first_one_of_each_then_the_rest():
    rids = np.arange(100, dtype=np.int64)
    made_by = np.where(rids < 90, "fault 1", np.where(rids < 98, "fault 2", "fault 3"))
    assert spread(rids, made_by).tolist() == [0, 90, 98, 1, 91]  # the first five, across the three faults
    many = np.array([f"fault {i % 20}" for i in range(100)])
    assert len(spread(rids, many)) == 12 and len(set(many[spread(rids, many)])) == 12
    assert spread(rids, None).tolist() == [0, 1, 2, 3, 4] and spread(rids[:2], made_by[:2]).tolist() == [0, 1]


def test_an_output_seen_only_in_part_is_never_judged_exactly_once(tmp_path):
    """A clean run, but the output table's export found writes its audit could not count as deliveries: the state
    proves effectively-exactly-once, nothing proves that no delivery was repeated."""
    sent = make_sent(2, 20)
    partly = {"ts_ms": T0, "event": "output_exported", "output": "egress", "observed": "partly", "updates_alone": 3}
    for history, found in [([], "exactly-once"), ([partly], "effectively-exactly-once")]:
        report = check_run(write_run(tmp_path / found, sent, clean_flow(sent), history=history))
        assert report[VERDICT] == found and report[HOP_FINDINGS][-1].verdict == found
        assert any("output egress: 3 write(s) by UPDATE" in gap for gap in report.gaps) == bool(history)


def test_copies_without_the_source_header_are_counted_per_topic(tmp_path):
    """Every source record carried the header; the ingress kept it on the first 30 copies it wrote, the processor
    on none."""
    sent = make_sent(4, 10)
    root = write_run(tmp_path / "run", sent, clean_flow(sent))
    pipeline = json.loads((root / "pipeline.json").read_text())
    (root / "pipeline.json").write_text(
        json.dumps(pipeline | {"source_header": "harness-trace", "expectations": {"headers_kept": True}})
    )
    lines = (root / "topics" / "ingested.jsonl").read_text().splitlines()
    with_header = [
        json.dumps(json.loads(line) | {"headers": {"harness-trace": "x", "other": "y"}}) for line in lines[:30]
    ]
    (root / "topics" / "ingested.jsonl").write_text("\n".join(with_header + lines[30:]) + "\n")
    report = check_run(root)
    assert {h.name: h.headers_lost for h in report[HOP_FINDINGS]} == {"ingested": 10, "processed": 40, "egress": None}
    assert report[VERDICT] == "exactly-once"
    result = next(e for e in report[EXPECTATIONS] if e.name == "headers_kept")
    assert result.status == "fail" and "10 at ingested" in result.detail and "40 at processed" in result.detail
