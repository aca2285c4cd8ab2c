"""The checker proven on synthetic evidence: anomalies injected at random places are found exactly
(counts, first hop, causes), and clean evidence yields none. Whole path: files -> loader -> checker."""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.checker.anomaly_records import WITNESSES
from harness.checker.causes import RETENTION
from harness.checker.check import check_run
from harness.checker.counts import CAUSES, COUNTS, HOP_FINDINGS, VERDICT
from harness.checker.fault_results import FAULTS
from harness.checker.latency import LATENCY
from harness.checker.periods import PERIODS
from harness.checker.reconcile import Counts, verdict
from harness.checker.record_ids import rids
from harness.checker.rid_sets import Members, Positions, copies, first_occurrences, isin, more_than_once
from tests.synthetic_run import HOPS, T0, Flow, clean_flow, make_sent, write_run

HOP_NAMES = list(HOPS) + ["egress"]


@dataclass
class Plan:
    mode: str
    lost_at: dict[int, list[int]]  # hop index -> records that disappear from that hop on
    duplicated_at: dict[int, list[int]]  # hop index -> records copied twice from that hop on
    copied_again: dict[
        int, list[int]
    ]  # hop index (1, 2) -> records of duplicated_at[0] copied once more there (a replay of a replay)
    unknown_present: list[int]
    unknown_absent: list[int]
    reordered: list[int]  # records delivered to the egress just after their successor
    phantoms: int
    retention_window: tuple[int, int, int]  # partition, first offset, end offset (deleted unread)
    retention_reached: list[int]  # in the window, but written downstream before the stop
    watermark: list[int]  # late records the dedup egress dropped
    with_fault: bool
    aborted_read: list[int]  # records with a copy in an aborted transaction, which the ingress read and passed on
    resent_read: list[int]  # records the source sent twice on purpose (the resend fault), both passed on
    retried_read: list[int]  # records the source's producer wrote again after a lost produce response, both passed on
    # (record, partner): a record acknowledged at its partner's offset, then gone (a leader replaced without it)
    truncated: list[tuple[int, int]] = field(default_factory=list)


@st.composite
def plans(draw):
    keys = draw(st.integers(1, 5))
    per_key = draw(st.integers(4, 30))
    sent = make_sent(keys, per_key)
    n = len(sent)
    mode = draw(st.sampled_from(["upsert", "append", "dedup"]))
    order = draw(st.permutations(range(n)))
    taken: set[int] = set()

    def take(k):
        chosen = [i for i in order if i not in taken][:k]
        taken.update(chosen)
        return chosen

    # Retention first: a contiguous range of one source partition.
    partition = draw(st.integers(0, 1))
    in_partition = np.flatnonzero(sent.partition == partition)
    window: tuple[int, int, int] = (partition, 0, 0)
    reached: list[int] = []
    if len(in_partition) and draw(st.booleans()):
        start = draw(st.integers(0, len(in_partition) - 1))
        length = draw(st.integers(1, min(6, len(in_partition) - start)))
        members = in_partition[start : start + length].tolist()
        window = (partition, int(sent.offset[members[0]]), int(sent.offset[members[-1]]) + 1)
        taken.update(members)
        reached = members[: draw(st.integers(0, min(2, len(members) - 1)))]
    budget = lambda: draw(st.integers(0, max(0, min(4, (n - len(taken)) // 8))))  # noqa: E731
    lost_at = {h: take(budget()) for h in range(3)}
    duplicated_at = {h: take(budget()) for h in range(3)}
    again = draw(st.lists(st.sampled_from(duplicated_at[0]), unique=True)) if duplicated_at[0] else []
    split = draw(st.integers(0, len(again)))
    copied_again = {1: again[:split], 2: again[split:]}
    unknown_present, unknown_absent = take(budget()), take(budget())
    watermark = take(budget()) if mode == "dedup" else []
    aborted_read = take(budget())
    resent_read = take(budget())
    retried_read = take(budget())
    truncated = []
    for i in take(budget()):
        partner = next((j for j in order if j not in taken and sent.partition[j] == sent.partition[i]), None)
        if partner is not None:
            taken.add(partner)
            truncated.append((i, partner))
    # Reordering: a clean record and its clean successor of the same key swap places at the egress.
    reordered = []
    for i in order:
        successor = i + keys  # same key, seq + 1 (records go round-robin over keys)
        if len(reordered) >= budget() or successor >= n:
            continue
        if i not in taken and successor not in taken:
            taken.update({i, successor})
            reordered.append(i)
    return sent, Plan(
        mode,
        lost_at,
        duplicated_at,
        copied_again,
        unknown_present,
        unknown_absent,
        reordered,
        draw(st.integers(0, 3)),
        window,
        reached,
        watermark,
        draw(st.booleans()),
        aborted_read,
        resent_read,
        retried_read,
        truncated,
    )


def build(sent, plan: Plan):
    """The evidence the plan describes: what each hop received, in order, and the history."""
    n = len(sent)
    everything = np.arange(n)
    partition, first, end = plan.retention_window
    deleted = set(np.flatnonzero((sent.partition == partition) & (sent.offset >= first) & (sent.offset < end)).tolist())
    deleted -= set(plan.retention_reached)
    for i in plan.unknown_present + plan.unknown_absent:
        sent.acked[i] = False
    for i in plan.watermark:
        sent.late[i] = True
    for i, partner in plan.truncated:
        sent.offset[i] = sent.offset[partner]
    sent.aborted = np.zeros(n, np.int64)
    sent.aborted[plan.aborted_read] = 1
    if plan.resent_read:
        sent.resent = np.zeros(n, np.int64)
        sent.resent[plan.resent_read] = 1
    gone: set[int] = set(deleted) | set(plan.unknown_absent) | {i for i, _ in plan.truncated}
    extra: list[int] = plan.aborted_read + plan.resent_read + plan.retried_read  # the source topic held them twice
    topics = {}
    for h, hop in enumerate(HOPS):
        gone |= set(plan.lost_at[h])
        extra += plan.duplicated_at[h] + plan.copied_again.get(h, [])
        topics[hop] = np.array([i for i in everything if i not in gone] + extra, dtype=np.int64)
    gone |= set(plan.lost_at[2])
    extra += plan.duplicated_at[2] + plan.copied_again[2]
    audit = [i for i in everything if i not in gone]
    for i in plan.reordered:  # i and its successor (i + keys) swap places
        a, b = audit.index(i), audit.index(i + int(sent.key.max()) + 1)
        audit[a], audit[b] = audit[b], audit[a]
    phantoms = list(range(n, n + plan.phantoms))
    audit = np.array(audit + extra + phantoms, dtype=np.int64)
    if plan.mode == "append":
        state = audit
    else:
        state = np.array(list(dict.fromkeys(i for i in audit.tolist() if i not in set(plan.watermark))), dtype=np.int64)
    flow = Flow(
        topics, audit, state, phantom_key=np.arange(plan.phantoms) + 1000, phantom_seq=np.zeros(plan.phantoms, np.int64)
    )
    history = []
    if plan.with_fault:
        history += [
            {
                "ts_ms": T0 - 2000,
                "event": "fault_begun",
                "kind": "kill-driver",
                "target": "processor",
                "signal": "SIGKILL",
                "scope": "streamlet",
                "restarts": True,
                "recovers": True,
            },
            {
                "ts_ms": T0 - 1000,
                "event": "fault_ended",
                "kind": "kill-driver",
                "target": "processor",
                "restarted": True,
            },
        ]
    if end > first:
        history += [
            {
                "ts_ms": T0 - 900,
                "event": "consumer_position",
                "streamlet": "ingress",
                "partitions": [["source", partition, first]],
            },
            {
                "ts_ms": T0 - 800,
                "event": "log_start_observed",
                "streamlet": "ingress",
                "partitions": [["source", partition, end, end + 99]],
            },
        ]
    return flow, history


def _read(plan: Plan) -> list[int]:
    """The records whose copies on the source topic the ingress read and passed on."""
    return plan.aborted_read + plan.resent_read + plan.retried_read


def write_lost_responses(run_dir, sent, retried: list[int]) -> None:
    """The source topic read back (every record acknowledged, and a second copy of each `retried` one, at an offset
    of its partition no acknowledgement names) and the proxy's log naming each second copy as one a dropped produce
    response answered."""
    if not retried:
        return
    at = sent.offset.copy()
    extra_offsets = 100_000 + np.arange(len(retried))
    rows = np.concatenate([np.flatnonzero(sent.acked), retried])
    offset = np.concatenate([at[sent.acked], extra_offsets])
    keys = [f"k{k:04d}" for k in sent.key[rows]]
    values = [json.dumps({"seq": int(q)}) for q in sent.seq[rows]]
    (run_dir / "source").mkdir(exist_ok=True)
    frame = pd.DataFrame({"partition": sent.partition[rows], "offset": offset, "key": keys, "value": values})
    frame.to_parquet(run_dir / "source" / "source.parquet")
    with open(run_dir / "kafka-requests.jsonl", "w") as log:
        for i, base in zip(retried, extra_offsets):
            place = {"topic": "source", "partition": int(sent.partition[i])}
            entry = {"api": "produce", "action": "drop-response", "partitions": [place | {"batches": [{"records": 1}]}]}
            log.write(json.dumps(entry | {"answered": [place | {"error_code": 0, "base_offset": int(base)}]}) + "\n")


def expected(sent, plan: Plan):
    n = len(sent)
    partition, first, end = plan.retention_window
    window = set(np.flatnonzero((sent.partition == partition) & (sent.offset >= first) & (sent.offset < end)).tolist())
    retention_lost = len(window - set(plan.retention_reached))
    unexplained = sum(len(v) for v in plan.lost_at.values())
    duplicated = sum(len(v) for v in plan.duplicated_at.values()) + len(_read(plan))
    unknown = len(plan.unknown_present) + len(plan.unknown_absent)
    counts = Counts(
        acked=n - unknown,
        unknown=unknown,
        lost=retention_lost + unexplained + len(plan.watermark) + len(plan.truncated),
        duplicated_deliveries=duplicated,
        duplicated_in_state=duplicated if plan.mode == "append" else 0,
        phantom=plan.phantoms,
        reordered=len(plan.reordered),
    )
    return counts, retention_lost, unexplained


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(plans())
def test_injected_anomalies_are_found_exactly(case):
    sent, plan = case
    flow, history = build(sent, plan)
    root = tempfile.mkdtemp(prefix="synthetic-run-")
    try:
        run_dir = write_run(root, sent, flow, mode=plan.mode, history=history)
        write_lost_responses(run_dir, sent, plan.retried_read)
        report = check_run(run_dir)
    finally:
        shutil.rmtree(root)
    counts, retention_lost, unexplained = expected(sent, plan)
    assert report.gaps == []
    assert report[COUNTS] == counts
    assert report[VERDICT] == verdict(counts)
    assert report[CAUSES]["lost"] == {
        "leader_truncated": len(plan.truncated),
        "retention": retention_lost,
        "redeploy": 0,
        "topic_recreated": 0,
        "watermark": len(plan.watermark),
        "query_failed": 0,
        "unexplained": unexplained,
    }
    # Copies: every extra copy made at the hop where its producer wrote it again, inherited below it.
    made = [len(plan.duplicated_at[h]) + len(plan.copied_again.get(h, [])) for h in range(3)]
    for h, hop in enumerate(report[HOP_FINDINGS]):
        extra = sum(made[: h + 1]) + len(_read(plan))
        assert (hop.copies.extra, hop.copies.made_here, hop.copies.inherited) == (extra, made[h], extra - made[h]), (
            hop.name
        )
    egress = report[HOP_FINDINGS][-1].copies
    kept = egress.extra if plan.mode == "append" else 0
    assert (egress.extra_in_state, egress.absorbed) == (kept, egress.extra - kept)
    assert report[CAUSES]["duplicated"] == (
        {"replay_after_fault": sum(made), "unexplained": 0}
        if plan.with_fault
        else {"replay_after_fault": 0, "unexplained": sum(made)}
    ) | {
        "aborted_read": len(plan.aborted_read),
        "resent_read": len(plan.resent_read),
        "retried_read": len(plan.retried_read),
        "producer_retry": 0,
    }
    if plan.with_fault:
        assert report[FAULTS][0].redelivered == sum(made)
        assert report[FAULTS][0].redelivered_at == {HOP_NAMES[h]: n for h, n in enumerate(made) if n}
    # The hop where each anomaly first appears.
    lost_first = {name: 0 for name in HOP_NAMES}
    lost_first["ingested"] += retention_lost + len(plan.truncated)
    lost_first["egress"] += len(plan.watermark)
    for h, records in plan.lost_at.items():
        lost_first[HOP_NAMES[h]] += len(records)
    assert {h.name: h.first_seen["lost"] for h in report[HOP_FINDINGS]} == lost_first
    assert {h.name: h.first_seen["duplicated"] for h in report[HOP_FINDINGS]} == {
        HOP_NAMES[h]: len(v) + (len(_read(plan)) if h == 0 else 0) for h, v in plan.duplicated_at.items()
    }
    if plan.retention_window[2] > plan.retention_window[1]:
        [window] = report[RETENTION]
        assert (
            window["lost"] == retention_lost
            and window["reached_downstream"] == len(plan.retention_reached)
            and window["exact"]
        )
    # The periods of sending (harness/checker/periods.py): their counts sum to the run's, each judged by one rule.
    periods = report[PERIODS].periods
    for name in ("acked", "unknown", "lost", "duplicated_deliveries", "duplicated_in_state", "phantom", "reordered"):
        in_periods = sum(getattr(p.counts, name) for p in periods)
        assert in_periods + getattr(report[PERIODS].unplaced, name) == getattr(counts, name), name
    assert all(p.verdict == verdict(p.counts) for p in periods)
    # Every anomaly class that occurred has witnesses of that class, and only those classes do.
    classes = {w.anomaly for w in report[WITNESSES]}
    assert classes == {
        name
        for name in ("lost", "duplicated_deliveries", "duplicated_in_state", "phantom", "reordered")
        if getattr(counts, name)
    }


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(plans())
def test_the_topics_recorded_in_columnar_form_give_the_same_report(case):
    """JSON lines and segments (harness/evidence/topics.py): the same report, whatever the anomalies."""
    sent, plan = case
    flow, history = build(sent, plan)
    reports = []
    for recordings in ("json", "columnar"):
        root = tempfile.mkdtemp(prefix=f"synthetic-{recordings}-")
        try:
            report = check_run(write_run(root, sent, flow, mode=plan.mode, history=history, recordings=recordings))
            reports.append(json.dumps(report.to_dict(), default=str).replace(root, "RUN"))
        finally:
            shutil.rmtree(root)
    assert reports[0] == reports[1]


def test_clean_evidence_has_no_anomaly(tmp_path):
    sent = make_sent(4, 50)
    report = check_run(write_run(tmp_path, sent, clean_flow(sent)))
    assert report[COUNTS] == Counts(200, 0, 0, 0, 0, 0, 0)
    assert report[VERDICT] == "exactly-once"
    assert [h.verdict for h in report[HOP_FINDINGS]] == ["exactly-once"] * 3
    assert report[WITNESSES] == [] and report.gaps == []
    assert report[CAUSES]["lost"]["unexplained"] == 0 and report[LATENCY].records == 200


@st.composite
def rid_sets(draw):
    """Two arrays of rids as evidence holds them: dense keys and seqs, copies, sometimes a far seq or an alien."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    keys, per_key = draw(st.integers(1, 50)), draw(st.integers(1, 400))
    every = rids(np.repeat(np.arange(keys), per_key), np.tile(np.arange(per_key), keys))
    values = rng.choice(every, size=draw(st.integers(0, 3 * len(every))))
    universe = rng.choice(every, size=draw(st.integers(0, len(every))), replace=False)
    if draw(st.booleans()):  # a phantom's seq far beyond the others: the space would be sparse
        values = np.append(values, rids([0], [1 << 35]))
    if draw(st.booleans()):  # an alien rid (harness/checker/record_ids.py)
        universe = np.append(universe, [-3])
        values = np.append(values, [-3, -4])
    return rng.permutation(values), universe


@settings(max_examples=80, deadline=None)
@given(rid_sets())
def test_rid_sets_counted_and_looked_up_densely_match_hashing(arrays):
    """harness/checker/rid_sets.py (a dense table where the rids fill one) against pandas' hashing."""
    values, universe = arrays
    assert (isin(values, universe) == pd.Series(values).isin(pd.Index(universe)).to_numpy()).all()
    assert (first_occurrences(values) == ~pd.Series(values).duplicated().to_numpy()).all()
    assert (more_than_once(values) == pd.Series(values).duplicated(keep=False).to_numpy()).all()
    counted, hashed = copies(values), pd.Series(values).value_counts(sort=False)
    assert counted.index.tolist() == hashed.index.tolist()  # the order each rid first occurs in
    assert counted.tolist() == hashed.tolist()
    assert (Positions(universe).of(values) == pd.Index(universe).get_indexer(values)).all()
    for members in (universe, np.append(universe, rids([0], [1 << 35]))):  # a flag table, then too far: hashing
        assert (Members(members).of(values) == pd.Series(values).isin(pd.Index(members)).to_numpy()).all()


def every_class(mode: str, keys: int = 4, per_key: int = 30):
    """One case with every anomaly class at once, a few records each (for an engine too costly to run on many
    generated cases): lost and copied at each hop, copies of copies, unknown outcomes present and absent, a
    reordering, phantoms, a retention window reached in part, late records (dedup), an aborted, a resent and a
    retried copy read (the last with write_lost_responses), after a fault."""
    sent = make_sent(keys, per_key)
    members = np.flatnonzero(sent.partition == 0)[10:14].tolist()
    free = [i for i in range(len(sent)) if i not in members]
    reordered = [next(i for i in reversed(free) if i + keys in free and i + keys < len(sent))]
    free = [i for i in free if i not in (reordered[0], reordered[0] + keys)]

    def take(k: int) -> list[int]:
        chosen, free[:k] = free[:k], []
        return chosen

    duplicated_at = {h: take(2) for h in range(3)}
    plan = Plan(
        mode,
        lost_at={h: take(2) for h in range(3)},
        duplicated_at=duplicated_at,
        copied_again={1: duplicated_at[0][:1], 2: duplicated_at[0][1:]},
        unknown_present=take(2),
        unknown_absent=take(2),
        reordered=reordered,
        phantoms=2,
        retention_window=(0, int(sent.offset[members[0]]), int(sent.offset[members[-1]]) + 1),
        retention_reached=members[:1],
        watermark=take(2) if mode == "dedup" else [],
        with_fault=True,
        aborted_read=take(1),
        resent_read=take(1),
        retried_read=take(1),
        truncated=[(i, next(j for j in free[1:] if sent.partition[j] == sent.partition[i])) for i in free[:1]],
    )
    return sent, plan
