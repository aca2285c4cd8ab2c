"""Faults that did not strike as declared (harness/checker/declared.py): each way a fault can miss, read from a
history, and what a miss does to a judged run: the fault table says what happened instead, an expectation that
would pass is unknown, and the outcome is never a pass."""

from __future__ import annotations

import json

import numpy as np

from harness.checker.anomaly_records import RECORDS, WITNESSES
from harness.checker.check import check_run
from harness.checker.counts import VERDICT
from harness.checker.declared import LATE, MOMENT, NOT_PLAYED, SKIPPED, misses
from harness.checker.expect import EXPECTATIONS
from harness.checker.fault_results import FAULTS
from harness.report.markdown import render_markdown
from harness.report.tables import fault_rows
from tests.synthetic_run import T0, Flow, clean_flow, make_sent, write_run


def planned(number: int, planned_s: float | None = 10.0, window_s: float | None = 120.0, **fields) -> dict:
    where = {"kind": "kill-driver", "target": "egress", **fields}
    return {"event": "fault_planned", "fault": number, "planned_s": planned_s, "window_s": window_s, **where}


def begun(number: int, late_s: float | None = 0.4, **fields) -> dict:
    classification = {"restarts": True, "recovers": True, "scope": "streamlet"}
    where = {"kind": "kill-driver", "target": "egress"}
    return {"event": "fault_begun", "fault": number, "late_s": late_s, **where, **classification, **fields}


def hows(history: list[dict]) -> list[tuple]:
    return [(m.number, m.how) for m in misses([{"ts_ms": i, **e} for i, e in enumerate(history)])]


def test_a_fault_that_began_within_its_window_struck_as_declared():
    assert hows([planned(1), begun(1, late_s=119.0), {"event": "fault_ended", "kind": "kill-driver"}]) == []


def test_a_fault_that_began_past_its_window_is_late_and_one_with_no_window_never_is():
    found = misses([{"ts_ms": 1, **planned(1)}, {"ts_ms": 2, **begun(1, late_s=150.5)}])
    assert [(m.number, m.how) for m in found] == [(1, LATE)]
    assert found[0].why == "began 150.5s after its planned 10s, past its window of 120s"
    assert hows([planned(1, window_s=None), begun(1, late_s=900.0)]) == []  # a storm's fault waits for room


def test_a_missed_moment_a_skipped_fault_and_one_never_begun_each_miss_and_a_failed_one_is_a_doubt_instead():
    history = [
        planned(1, planned_s=None, window_s=None, kind="resend", target="generator"),
        planned(2),
        planned(3, 20.0),
        planned(4, 30.0, target="processor"),
        planned(5, 40.0),
        planned(6, 50.0),
        {"event": "fault_begun", "kind": "resend", "target": "generator", "fault": 1},
        begun(2),
        {"event": "crash_point_missed", "kind": "kill-driver", "target": "egress", "fault": 3, "reason": "no batch"},
        begun(3, late_s=150.0),
        {"event": "fault_skipped", "kind": "kill-driver", "target": "processor", "fault": 4, "reason": "not running"},
        {"event": "fault_failed", "kind": "kill-driver", "target": "egress", "fault": 5, "stage": "effect"},
    ]
    assert hows(history) == [(3, MOMENT), (4, SKIPPED), (6, NOT_PLAYED)]


def test_an_older_run_without_planned_faults_misses_by_its_skips_and_missed_moments():
    history = [
        {"event": "fault_begun", "kind": "kill-driver", "target": "egress", "restarts": True},
        {"event": "crash_point_missed", "target": "egress", "reason": "no batch reached the crash point"},
        {"event": "fault_skipped", "kind": "broker-kill", "target": "broker-2", "fault": 2, "reason": "down"},
    ]
    assert hows(history) == [(None, MOMENT), (2, SKIPPED)]


def test_a_run_whose_fault_missed_its_moment_is_unknown_and_says_which_fault_and_why(tmp_path):
    sent = make_sent(4, 20)
    history = [
        {
            "ts_ms": 1_000,
            "event": "fault_planned",
            "fault": 1,
            "kind": "kill-driver",
            "target": "egress",
            "planned_s": 5.0,
            "window_s": 120.0,
        },
        {
            "ts_ms": 1_500,
            "event": "crash_point_missed",
            "kind": "kill-driver",
            "target": "egress",
            "fault": 1,
            "planned_s": 5.0,
            "late_s": 150.0,
            "reason": "no batch in flight with output written within 150s",
        },
        {"ts_ms": 1_600, **begun(1, late_s=150.0, at="in-flight", signal="SIGKILL", planned_s=5.0)},
        {"ts_ms": 1_700, "event": "process_started", "streamlet": "egress"},
        {"ts_ms": 1_800, "event": "fault_ended", "kind": "kill-driver", "target": "egress", "restarted": True},
    ]
    run = write_run(tmp_path / "run", sent, clean_flow(sent), history=history, expectations={"max_lost": 0})
    report = check_run(run)
    assert report[VERDICT] == "exactly-once" and report.outcome == "unknown"
    [expectation] = report[EXPECTATIONS]
    assert expectation.status == "unknown" and "fault 1 (kill-driver egress) did not strike as declared" in (
        expectation.detail
    )
    [fault] = report[FAULTS]
    why = "no batch in flight with output written within 150s; it struck at whatever moment it was"
    assert (fault.number, fault.declared) == (1, f"{MOMENT}: {why}")
    assert report.run_info["faults_planned"] == report.run_info["faults_played"] == 1
    data = json.loads(json.dumps(report.to_dict(), default=str))
    assert data["fault_misses"][0]["how"] == MOMENT and data["partial"] is True
    text = render_markdown(report)
    assert "| 1 | kill-driver | egress |" in text and f"no, {MOMENT}: {why}" in text
    assert f"outcome unknown: fault 1 (kill-driver egress) did not strike as declared: {MOMENT}" in text


def test_one_number_per_fault_in_the_fault_table_the_witnesses_and_the_duplicated_csv(tmp_path):
    """Fault 1 a resend (whole-run), fault 2 skipped, fault 3 a kill of the processor whose replay copied four
    records: every place that names the kill calls it fault 3, and "planned" and "played" both count the resend."""
    sent = make_sent(2, 20)
    every = np.arange(len(sent))
    replayed = np.concatenate([every, np.arange(4)])  # the processor's batch ran again after the kill
    flow = Flow({"ingested": every, "processed": replayed}, replayed, every)
    resend = {"kind": "resend", "target": "generator", "scope": "none", "restarts": False, "recovers": False}
    history = [
        {"ts_ms": T0 - 5000, **planned(1, None, None, kind="resend", target="generator")},
        {"ts_ms": T0 - 5000, **planned(2, 1.0, target="egress")},
        {"ts_ms": T0 - 5000, **planned(3, 2.0, target="processor")},
        {"ts_ms": T0 - 4900, "event": "fault_begun", "fault": 1, **resend},
        {"ts_ms": T0 - 4000, "event": "fault_skipped", "kind": "kill-driver", "target": "egress", "fault": 2,
         "reason": "the driver of egress is not running"},
        {"ts_ms": T0 - 3000, **begun(3, target="processor")},
        {"ts_ms": T0 - 2000, "event": "fault_ended", "kind": "kill-driver", "target": "processor", "restarted": True},
        {"ts_ms": T0 + 9000, "event": "fault_ended", "kind": "resend", "target": "generator"},
    ]  # fmt: skip
    report = check_run(write_run(tmp_path / "run", sent, flow, history=history))
    assert [(f.number, f.kind) for f in report[FAULTS]] == [(1, "resend"), (3, "kill-driver")]
    assert report.run_info["faults_planned"] == 3 and report.run_info["faults_played"] == 2
    assert [(m.number, m.how) for m in report.fault_misses] == [(2, SKIPPED)] and report.outcome == "unknown"
    copies = [c.fault for w in report[WITNESSES] if w.anomaly == "duplicated_deliveries" for c in w.copies]
    causes = {w.cause for w in report[WITNESSES] if w.anomaly == "duplicated_deliveries"}
    assert set(copies) == {None, 3} and all("after fault 3, kill-driver processor" in c for c in causes), causes
    assert set(report[RECORDS]["duplicated"].fault) == {3}
    assert [row[0] for row in fault_rows(report)] == [1, 3]
