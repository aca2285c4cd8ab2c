"""The replays check (harness/checker/checks/replay.py): on a synthetic run whose processor is killed and replays
records at its output topic, the copies its restart wrote, when their records were sent and when it last
checkpointed, each derived here from the indices the test injected."""

from __future__ import annotations

import numpy as np

from harness.checker.anomaly_records import RECORDS, WITNESSES
from harness.checker.check import check_run
from harness.checker.fault_results import FAULTS
from tests.synthetic_run import HOPS, T0, Flow, make_sent, write_run

KILL_MS = T0 + 1000
CHECKPOINT_MS = T0 + 700  # the processor's last batch committed before the kill
REPLAY_DELAY_MS = 1000  # the replayed copies are written this long after the first ones (after the restart)


def _kill(number: int = 1, at: int = KILL_MS) -> list[dict]:
    common = {"kind": "kill-driver", "target": "processor"}
    return [
        {"ts_ms": at, "event": "fault_begun", **common, "signal": "SIGKILL", "scope": "streamlet"}
        | {"restarts": True, "recovers": True, "fault": number},
        {"ts_ms": at + 10, "event": "process_killed", "process": "streamlet-processor", "pid": number},
        {"ts_ms": at + 500, "event": "process_started", "process": "streamlet-processor", "pid": number + 1}
        | {"role": "driver", "streamlet": "processor"},
        {"ts_ms": at + 600, "event": "fault_ended", **common, "restarted": True},
    ]


def _run(tmp_path, replayed: np.ndarray):
    sent = make_sent(2, 100)  # 200 records, one every 5 ms from T0, each written 100 ms after it is sent
    every = np.arange(len(sent))
    processed = np.concatenate([every, replayed])
    delays = np.concatenate([np.zeros(len(every), np.int64), np.full(len(replayed), REPLAY_DELAY_MS)])
    flow = Flow({HOPS[0]: every, HOPS[1]: processed}, every, every, delays={HOPS[1]: delays})
    progress = {"processor": [{"ts_ms": CHECKPOINT_MS, "event": "progress", "progress": {"batchId": 3}}]}
    report = check_run(write_run(tmp_path / "run", sent, flow, history=_kill(), progress=progress))
    return sent, report.sections["replay"]


def test_a_restarts_replay_is_counted_with_when_its_records_were_sent(tmp_path):
    replayed = np.arange(150, 170)  # sent 750-845 ms after T0, first written 850-945 ms: after the checkpoint
    sent, section = _run(tmp_path, replayed)
    before_s = (KILL_MS - sent.event_time_ms[replayed]) / 1000
    [row] = section.rows
    assert row[:7] == (1, "processor", "micro-batch", 0.3, 20, before_s.max(), before_s.min())


def test_a_run_without_restarts_has_no_replays_section(tmp_path):
    sent = make_sent(2, 10)
    every = np.arange(len(sent))
    report = check_run(write_run(tmp_path / "run", sent, Flow({h: every for h in HOPS}, every, every)))
    assert "replay" not in report.sections


def test_a_restart_killed_again_before_its_first_batch_has_no_recovery_of_its_own(tmp_path):
    """The first batch after a second kill is the second restart's recovery, not the first's."""
    common = {"kind": "kill-driver", "target": "processor", "signal": "SIGKILL", "scope": "streamlet"}
    history = []
    for number, at in ((1, KILL_MS), (2, KILL_MS + 5000)):
        history += [
            {"ts_ms": at, "event": "fault_begun", **common, "restarts": True, "recovers": True, "fault": number},
            {"ts_ms": at + 500, "event": "process_started", "process": "streamlet-processor", "pid": number}
            | {"role": "driver", "streamlet": "processor"},
            {"ts_ms": at + 600, "event": "fault_ended", "kind": common["kind"], "target": "processor"}
            | {"restarted": True},
        ]
    batch = {"ts_ms": KILL_MS + 7000, "event": "progress", "progress": {"batchId": 4, "numInputRows": 10}}
    sent = make_sent(2, 10)
    every = np.arange(len(sent))
    flow = Flow({h: every for h in HOPS}, every, every)
    report = check_run(write_run(tmp_path / "run", sent, flow, history=history, progress={"processor": [batch]}))
    first, second = report[FAULTS]
    assert first.recovery_s is None and first.note == "recovery unknown: killed again before its first batch"
    assert second.recovery_s == 2.0 and second.note == ""


def test_a_kill_right_after_a_restarts_first_output_credits_each_copy_to_the_restart_that_wrote_it(tmp_path):
    """Two kills, the second as the first restart's first output is written; the copies carry their records'
    send times (a job passing its input's timestamp on), so only the topic's sampled log ends tell which run wrote
    each: the first restart's replay copies records sent before the first kill, the second's records sent after it,
    which the first restart had written once. Each copy is fault 2's or fault 1's by that, in the records, the
    witnesses and the replays section."""
    sent = make_sent(2, 400)  # 800 records, one every 5 ms from T0
    kills = (T0 + 1000, T0 + 3000)
    first_run, second_run, third_run = np.arange(0, 200), np.arange(200, 441), np.arange(441, 800)
    again_first, again_second = np.arange(150, 170), np.arange(400, 441)  # sent before kill 1; after kill 1
    processed = np.concatenate([first_run, again_first, second_run, again_second, third_run])
    every = np.arange(len(sent))
    flow = Flow({HOPS[0]: every, HOPS[1]: processed}, processed, every)  # the egress's upsert absorbs the copies
    history = []
    for number, (at, written) in enumerate(
        zip(kills, (first_run, processed[: -len(third_run) - len(again_second)])), 1
    ):
        history += _kill(number, at)
        # sampled while the processor is down: the log ends its runs so far had written
        ends = [["processed", p, 0, int((sent.key[written] % 2 == p).sum())] for p in (0, 1)]
        history.append({"ts_ms": at + 200, "event": "offsets", "partitions": ends})
    report = check_run(write_run(tmp_path / "run", sent, flow, history=history))

    made = report[RECORDS]["duplicated"]
    by_fault = {n: set(made.seq[made.fault == n]) for n in (1, 2)} if "fault" in made else None
    assert by_fault is not None, made.columns
    key_seq = lambda index: {int(sent.seq[i]) for i in index}  # noqa: E731
    assert by_fault == {1: key_seq(again_first), 2: key_seq(again_second)}
    rows = {row[0]: row for row in report.sections["replay"].rows}
    assert (rows[1][4], rows[2][4]) == (len(again_first), len(again_second))
    assert rows[2][6] == (kills[1] - sent.event_time_ms[again_second].max()) / 1000 > 0  # sent before kill 2
    assert min(rows[1][5:7]) > 0  # all sent before kill 1
    duplicated = [w for w in report[WITNESSES] if w.anomaly == "duplicated_deliveries"]
    assert {w.seq in key_seq(again_first) for w in duplicated} == {True, False}, duplicated  # both faults' shown
    for witness in duplicated:
        number = 1 if witness.seq in key_seq(again_first) else 2
        assert witness.cause.endswith(f"after fault {number}, kill-driver processor"), witness
