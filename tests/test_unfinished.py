"""A run that did not finish (harness/checker/unfinished.py): a missing record is lost only where the evidence
proves it (deleted by retention, or skipped past by a committed batch at a hop whose evidence is complete), the
rest is undelivered, and the loss-based verdicts are unknown. Synthetic runs with the proof placed on purpose,
the real run whose harness is SIGKILLed half-way, cleaned and reported is tests/test_run.py's."""

from __future__ import annotations

import json

import numpy as np

from harness.checker.anomaly_records import RECORDS
from harness.checker.check import check_run
from harness.checker.counts import CAUSES, COUNTS, HOP_FINDINGS, VERDICT
from harness.checker.periods import PERIODS
from tests.synthetic_run import T0, Flow, make_sent, write_run


def _offsets_in(sent, index: np.ndarray) -> np.ndarray:
    """Each copy's offset in a topic written in `index` order (partition = key % 2, as synthetic_run writes it)."""
    partition = sent.key[index] % 2
    offset = np.zeros(len(index), np.int64)
    for p in (0, 1):
        offset[partition == p] = np.arange((partition == p).sum())
    return offset


def _batch(ts: int, topic: str, ends: dict[int, int]) -> dict:
    return {
        "ts_ms": ts,
        "event": "progress",
        "query": "main",
        "progress": {
            "batchId": 0,
            "numInputRows": 1,
            "sources": [{"endOffset": {topic: {str(p): o for p, o in ends.items()}}}],
        },
    }


def _run(tmp_path, recorded: bool, status: str = "interrupted", every_ms: int = 5):
    """100 records, one sent every `every_ms`: 10 never reach `processed` (though the processor committed past them
    all); of those that did, 10 reached the egress's state after it had committed past them, 10 were beyond its
    last commit."""
    sent = make_sent(4, 25)
    sent.event_time_ms = T0 + np.arange(len(sent)) * every_ms
    every = np.arange(len(sent))
    skipped_by_processor = every[10:20]
    processed = np.setdiff1d(every, skipped_by_processor)
    offsets = _offsets_in(sent, processed)
    parts = sent.key[processed] % 2
    ends = {
        p: int(np.sort(offsets[parts == p])[-5]) for p in (0, 1)
    }  # the egress committed all but the last 5 per partition
    beyond = processed[offsets >= np.array([ends[p] for p in parts])]
    skipped_by_egress = processed[:10]
    state = np.setdiff1d(processed, np.concatenate([skipped_by_egress, beyond]))
    history = [{"ts_ms": 1, "event": "topics_recorded", "topics": ["ingested", "processed"]}] if recorded else []
    root = write_run(
        tmp_path / f"run-{recorded}-{status}",
        sent,
        Flow({"ingested": every, "processed": processed}, state, state),
        history=history,
        expectations={"max_lost": 0},
        progress={"processor": [_batch(2, "ingested", {0: 50, 1: 50})], "egress": [_batch(3, "processed", ends)]},
    )
    (root / "run.json").write_text(json.dumps({"status": status}))
    key = lambda index: {(f"k{int(k):04d}", int(s)) for k, s in zip(sent.key[index], sent.seq[index])}  # noqa: E731
    return root, key(skipped_by_processor), key(skipped_by_egress), key(beyond)


def _lost(report) -> set:
    return set(zip(report[RECORDS]["lost"].key, report[RECORDS]["lost"].seq))


def test_an_unfinished_run_calls_lost_only_what_a_committed_batch_skipped_at_a_hop_with_complete_evidence(tmp_path):
    root, by_processor, by_egress, beyond = _run(tmp_path, recorded=False)
    report = check_run(root)
    # `processed` was recorded only in part (no topics_recorded): what is missing there proves nothing.
    assert _lost(report) == by_egress and report[COUNTS].lost == len(by_egress)
    assert report[COUNTS].undelivered == len(by_processor) + len(beyond)
    assert report[VERDICT] == "unknown" and {h.verdict for h in report[HOP_FINDINGS]} == {"unknown"}
    assert report.outcome == "unknown" and report[CAUSES]["lost"]["unexplained"] == len(by_egress)
    recorded = check_run(_run(tmp_path, recorded=True)[0])
    assert _lost(recorded) == by_processor | by_egress and recorded[COUNTS].undelivered == len(beyond)
    assert [h.counts.lost for h in recorded[HOP_FINDINGS]] == [0, len(by_processor), len(by_processor | by_egress)]


def test_a_finished_run_calls_every_missing_record_lost(tmp_path):
    root, by_processor, by_egress, beyond = _run(tmp_path, recorded=False, status="complete")
    report = check_run(root)
    assert _lost(report) == by_processor | by_egress | beyond and report[COUNTS].undelivered == 0
    assert report[VERDICT] == "at-most-once" and report.outcome == "fail"


def test_the_periods_of_an_unfinished_run_judge_those_whose_every_record_is_accounted_for_provisionally(tmp_path):
    """Ten periods of ten records: the two whose missing records are proven lost are judged, as are those whose
    every record arrived; the last ones, with records not delivered yet, are unknown; all of it provisional."""
    root, by_processor, by_egress, beyond = _run(tmp_path, recorded=True, every_ms=100)
    periods = check_run(root)[PERIODS]
    assert periods.length_s == 1 and len(periods.periods) == 10 and periods.provisional
    assert [p.counts.lost for p in periods.periods] == [10, 10] + [0] * 8  # sent 0-9 and 10-19
    undelivered = [p.counts.undelivered for p in periods.periods]
    assert sum(undelivered) == len(beyond) and undelivered[:7] == [0] * 7 and undelivered[-1] > 0
    assert [p.verdict for p in periods.periods] == ["at-most-once"] * 2 + ["exactly-once"] * 5 + [
        "unknown" if n else "exactly-once" for n in undelivered[7:]
    ]


def test_records_the_ack_log_has_not_recorded_yet_are_not_phantoms_while_the_run_goes(tmp_path):
    sent = make_sent(4, 25)  # seqs 0..24 of keys k0000..k0003 in the log
    n = len(sent)
    # reached the egress: every record, then k0000/25 and k0001/30 (sent after the log's last write) and k0009/0, a key
    # the log never had (a phantom whatever the run)
    audit = np.concatenate([np.arange(n), [n, n + 1, n + 2]])
    flow = Flow({"ingested": audit, "processed": audit}, audit, audit, np.array([0, 1, 9]), np.array([25, 30, 0]))
    going = write_run(tmp_path / "going", sent, flow)
    (going / "run.json").unlink()  # not written yet: the run goes on
    report = check_run(going)
    assert report[COUNTS].phantom == 1 and report[VERDICT] == "unknown"
    assert set(zip(report[RECORDS]["phantom"].key, report[RECORDS]["phantom"].seq)) == {("k0009", 0)}
    assert [h.counts.phantom for h in report[HOP_FINDINGS]] == [1, 1, 1]
    assert any(g.startswith("2 record(s) reached the pipeline before the acknowledgement log") for g in report.gaps)
    finished = check_run(write_run(tmp_path / "finished", sent, flow))
    assert finished[COUNTS].phantom == 3 and finished[VERDICT] == "none"
