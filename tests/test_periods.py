"""The run's periods (harness/checker/periods.py): counts and a verdict per period of sending, summing to the run's."""

from __future__ import annotations

import json

import numpy as np

from harness.checker.check import check_run
from harness.checker.counts import COUNTS, VERDICT
from harness.checker.periods import PERIODS, period_length_s
from harness.checker.reconcile import verdict
from harness.evidence.history import BUDGET_REACHED
from tests.conftest import run_harness
from tests.synthetic_run import T0, Flow, clean_flow, make_sent, write_run


def test_each_anomaly_is_counted_in_the_period_its_records_were_sent_in_and_the_periods_sum_to_the_run(tmp_path):
    sent = make_sent(4, 500)  # 2,000 records, one every 5 ms: ten periods of one second, 200 records each
    every = np.arange(len(sent))
    kept = np.setdiff1d(every, np.arange(450, 460))  # lost at the processor: period 2
    audit = np.concatenate([kept, np.arange(1000, 1005), [len(sent)]])  # stored twice: period 5; one phantom
    flow = Flow({"ingested": every, "processed": kept}, audit, audit, np.array([9]), np.array([7]))
    report = check_run(write_run(tmp_path, sent, flow, mode="append"))
    periods = report[PERIODS]
    assert periods.length_s == 1 and len(periods.periods) == 10 and not periods.provisional
    assert [p.start_ms for p in periods.periods] == [T0 + 1000 * i for i in range(10)]
    assert [p.counts.acked for p in periods.periods] == [200] * 10
    assert [p.counts.lost for p in periods.periods] == [0, 0, 10, 0, 0, 0, 0, 0, 0, 0]
    assert [p.counts.duplicated_in_state for p in periods.periods] == [0] * 5 + [5] + [0] * 4
    # the phantom arrived after the last record was sent: the last period's
    assert [p.counts.phantom for p in periods.periods] == [0] * 9 + [1] and periods.unplaced.phantom == 0
    assert [p.verdict for p in periods.periods] == ["exactly-once"] * 2 + ["at-most-once"] + ["exactly-once"] * 2 + [
        "at-least-once"
    ] + ["exactly-once"] * 3 + ["none"]
    for name in ("acked", "unknown", "lost", "duplicated_deliveries", "duplicated_in_state", "phantom", "reordered"):
        assert sum(getattr(p.counts, name) for p in periods.periods) == getattr(report[COUNTS], name), name
    assert all(p.verdict == verdict(p.counts) for p in periods.periods)
    assert report.to_dict()["periods"]["periods"][2]["counts"]["lost"] == 10


def test_a_period_is_the_shortest_round_length_that_cuts_the_run_into_at_most_24():
    assert [period_length_s(ms) for ms in (0, 10_000, 23_999, 24_000, 3_600_000, 8 * 3_600_000)] == [
        1,
        1,
        1,
        2,
        300,
        1800,
    ]


def test_the_command_line_prints_the_trend_of_a_run_over_24_minutes_long(tmp_path):
    sent = make_sent(4, 500)
    sent.event_time_ms = T0 + np.arange(len(sent)) * 1000  # 2,000 records a second apart: 17 periods of 2 minutes
    every = np.arange(len(sent))
    audit = np.concatenate([every, np.arange(1000, 1005)])  # stored twice: the ninth period (from 16 minutes on)
    result = run_harness(
        "check",
        str(write_run(tmp_path, sent, Flow({"ingested": every, "processed": every}, audit, audit), mode="append")),
    )
    assert (
        "periods: 17 periods of 120 s by when their records were sent: 16 exactly-once, 1 at-least-once\n"
        in result.stdout
    ), result.stdout
    short = run_harness("check", str(write_run(tmp_path / "short", make_sent(4, 50), clean_flow(make_sent(4, 50)))))
    assert short.returncode == 0 and "periods:" not in short.stdout, short.stdout


def test_a_record_whose_time_the_ack_log_lost_is_in_no_period_and_still_counted(tmp_path):
    sent = make_sent(4, 500)
    sent.event_time_ms[[3, 1500]] = 0  # as read_sent leaves a damaged line's time
    every = np.arange(len(sent))
    kept = np.setdiff1d(every, [1500])  # and one of them lost
    report = check_run(write_run(tmp_path, sent, Flow({"ingested": every, "processed": kept}, kept, kept)))
    unplaced, periods = report[PERIODS].unplaced, report[PERIODS].periods
    assert (unplaced.acked, unplaced.lost, len(periods)) == (2, 1, 10)
    assert [p.counts.acked for p in periods] == [199] + [200] * 6 + [199, 200, 200] and report[COUNTS].lost == 1
    assert [p.verdict for p in periods] == ["exactly-once"] * 10 and report[VERDICT] == "at-most-once"


def test_a_run_whose_evidence_budget_ended_its_workload_has_its_unrun_periods_unknown_and_its_outcome_too(tmp_path):
    sent = make_sent(4, 500)  # 10 s of records; the run was planned for 20 s: periods of one second
    budget = {"ts_ms": T0 + 10_000, "event": BUDGET_REACHED, "budget_bytes": 50_000_000, "evidence_bytes": 45_500_000}
    run_dir = write_run(tmp_path, sent, clean_flow(sent), history=[budget])
    scenario = json.loads((run_dir / "scenario.json").read_text())
    (run_dir / "scenario.json").write_text(json.dumps(scenario | {"resolved": {"seed": 1, "duration_s": 20}}))
    report = check_run(run_dir)
    periods = report[PERIODS].periods
    assert report[PERIODS].length_s == 1 and len(periods) == 20
    assert [p.verdict for p in periods] == ["exactly-once"] * 10 + ["unknown"] * 10
    assert {(p.counts.acked, p.counts.lost) for p in periods[10:]} == {(0, None)}
    assert sum(p.counts.acked for p in periods) == report[COUNTS].acked == 2000
    assert report[VERDICT] == "exactly-once" and report.outcome == "unknown"
    assert report.doubts == [
        "the workload ended early: the run's evidence reached 45.5 MB of its budget of 50.0 MB; the faults after it "
        "were not played and the periods after it were not run"
    ]
    # Without the budget, a run planned longer than its records' span is cut by its plan, and has no empty periods.
    longer = write_run(tmp_path / "longer", sent, clean_flow(sent))
    (longer / "scenario.json").write_text(json.dumps(scenario | {"resolved": {"seed": 1, "duration_s": 60}}))
    planned = check_run(longer)[PERIODS]
    assert planned.length_s == 5 and [p.counts.acked for p in planned.periods] == [1000, 1000]
