"""The replays check (harness/checker/checks/replay.py): on a synthetic run whose processor is killed and replays
records at its output topic, the copies its restart wrote, when their records were sent and when it last
checkpointed, each derived here from the indices the test injected."""

from __future__ import annotations

import numpy as np

from harness.checker.check import check_run
from tests.synthetic_run import HOPS, T0, Flow, make_sent, write_run

KILL_MS = T0 + 1000
CHECKPOINT_MS = T0 + 700  # the processor's last batch committed before the kill
REPLAY_DELAY_MS = 1000  # the replayed copies are written this long after the first ones (after the restart)


def _kill() -> list[dict]:
    common = {"kind": "kill-driver", "target": "processor"}
    return [
        {"ts_ms": KILL_MS, "event": "fault_begun", **common, "signal": "SIGKILL", "scope": "streamlet"}
        | {"restarts": True, "recovers": True, "fault": 1},
        {"ts_ms": KILL_MS + 10, "event": "process_killed", "process": "streamlet-processor", "pid": 1},
        {"ts_ms": KILL_MS + 500, "event": "process_started", "process": "streamlet-processor", "pid": 2}
        | {"role": "driver", "streamlet": "processor"},
        {"ts_ms": KILL_MS + 600, "event": "fault_ended", **common, "restarted": True},
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
    first, second = report.faults
    assert first.recovery_s is None and first.note == "recovery unknown: killed again before its first batch"
    assert second.recovery_s == 2.0 and second.note == ""
