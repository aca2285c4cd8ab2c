"""Memory and disk trends from the history's resource samples: growth is judged only once a process is warm,
a restart is not a leak, and what could not be measured is unknown, never a pass."""

from __future__ import annotations

import json
import os
import time

import click
import pytest

from harness.checker.expect import judge
from harness.checker.expectations.kind import Found
from harness.checker.reconcile import Counts
from harness.checker.resources import RESOURCE_USE, WARMUP_S, WINDOW_S, resource_use
from harness.cli.options import UntilType
from harness.evidence.history import BUDGET
from harness.process.supervisor import ProcessRecord, start_ticks_of
from harness.process.usage import rss_bytes, session_rss_bytes, tree_bytes
from harness.report.index import _recovery_percentiles, _throughput, write_index
from harness.report.tables import disk_text

MINUTE_MS = 60_000
COUNTS = Counts(acked=1, unknown=0, lost=0, duplicated_deliveries=0, duplicated_in_state=0, phantom=0, reordered=0)


def _found(**found) -> Found:
    """What the expectations read of a finished exactly-once run, with `found` in place."""
    return Found(
        **{
            "verdict": "exactly-once",
            "counts": COUNTS,
            "hops": [],
            "lost_by_cause": {},
            "faults": [],
            "query_failures": [],
            "sections": {},
            "unfinished": "",
            "resources": None,
            **found,
        }
    )


def _sample(minute: float, rss: dict[str, tuple[int, float]], disk: float = 10.0) -> dict:
    return {
        "ts_ms": int(minute * MINUTE_MS),
        "event": "resources",
        "rss_mb": {name: {"pid": pid, "mb": mb} for name, (pid, mb) in rss.items()},
        "disk_mb": {"cluster": disk, "logs": 1.0},
    }


def _soak(minutes: int, broker_mb, driver=lambda minute: (100, 500.0)) -> list[dict]:
    return [
        _sample(m, {"broker-1": (7, broker_mb(m)), "streamlet-egress": driver(m)}, disk=10 + m)
        for m in range(minutes + 1)
    ]


def test_growth_compares_the_medians_of_the_first_and_the_last_five_warm_minutes_of_the_last_pid():
    history = _soak(30, broker_mb=lambda m: 400 + 10 * m)  # grows all along
    use = resource_use(history, workload_start_ms=0)
    broker = next(p for p in use.processes if p.name == "broker-1")
    assert WARMUP_S == 600 and WINDOW_S == 300
    assert broker.warm_mb == 520  # minutes 10 to 14 once warm: median at minute 12
    assert broker.end_mb == 680 and broker.last_mb == 700  # minutes 26 to 30: median at minute 28
    assert broker.growth == pytest.approx((680 - 520) / 520, abs=1e-4)
    assert use.disk_first_mb == 11 and use.disk_last_mb == 41 and use.disk_max_mb == 41
    assert use.samples == 31 and use.series["t_s"][-1] == 1800


def test_a_restarted_driver_starts_a_new_life_and_is_not_warm_until_ten_minutes_after_its_restart():
    history = _soak(30, broker_mb=lambda m: 400, driver=lambda m: (100, 300 + m) if m < 25 else (200, 200.0))
    use = resource_use(history, workload_start_ms=0)
    driver = next(p for p in use.processes if p.name == "streamlet-egress")
    assert driver.pid == 200 and driver.growth is None and driver.max_mb == 324
    assert use.max_growth == 0.0  # the broker, flat


def test_a_run_shorter_than_the_warm_up_has_no_growth_and_the_expectation_is_unknown_never_pass():
    use = resource_use(_soak(8, broker_mb=lambda m: 400 + 50 * m), workload_start_ms=0)
    assert use.max_growth is None
    result = judge({"max_memory_growth": 0.1}, _found(resources=use))[0]
    assert result.status == "unknown" and "10 minutes past its 10-minute warm-up" in result.detail
    result = judge({"max_memory_growth": 0.1}, _found(resources=None))[0]
    assert result.status == "unknown"
    assert resource_use([{"ts_ms": 1, "event": "offsets"}], 0) is None


def test_growth_beyond_the_limit_fails_and_names_the_process():
    use = resource_use(_soak(30, broker_mb=lambda m: 400 + 10 * m), workload_start_ms=0)
    failed = judge({"max_memory_growth": 0.1}, _found(resources=use))[0]
    assert failed.status == "fail" and "broker-1 +30.8%" in failed.detail
    # One sample's spike (a JVM's collection) moves no median.
    spiky = resource_use(_soak(30, broker_mb=lambda m: 900 if m == 30 else 400), workload_start_ms=0)
    assert spiky.max_growth == 0.0
    flat = resource_use(_soak(30, broker_mb=lambda m: 400 + (m % 2)), workload_start_ms=0)
    passed = judge({"max_memory_growth": 0.1}, _found(resources=flat))[0]
    assert passed.status == "pass"


def test_the_evidence_is_the_run_directory_but_the_brokers_data_and_is_shown_against_its_budget():
    history = _soak(20, lambda m: 300.0)  # disk: the brokers' data 10 + m MiB, logs 1 MiB
    use = resource_use(history, 0)
    assert use.evidence_max_bytes == 1024 * 1024 and use.evidence_budget_bytes is None
    history[0:0] = [{"ts_ms": 0, "event": BUDGET, "budget_bytes": 50_000_000}]
    history[-1]["disk_mb"]["egress"] = 20.5
    use = resource_use(history, 0)
    assert (use.evidence_max_bytes, use.evidence_budget_bytes) == (int(21.5 * 1024 * 1024), 50_000_000)
    report = {RESOURCE_USE: use}  # what disk_text reads of a Report
    assert "; the evidence (all but the brokers' data) at most 22.5 MB, of its budget of 50.0 MB;" in disk_text(report)


def test_damaged_samples_are_skipped():
    history = _soak(12, broker_mb=lambda m: 400)
    history.insert(3, {"ts_ms": 3 * MINUTE_MS, "event": "resources", "rss_mb": {"broker-1": "lots"}, "disk_mb": None})
    history.insert(4, {"ts_ms": 4 * MINUTE_MS, "event": "resources", "rss_mb": None})
    use = resource_use(history, workload_start_ms=0)
    assert use.samples == 14 and {p.name for p in use.processes} == {"broker-1", "streamlet-egress"}


def test_the_usage_readers_see_this_process_and_a_real_tree(tmp_path):
    assert rss_bytes(os.getpid()) > 10 * 1024 * 1024
    me = ProcessRecord("me", os.getsid(0), start_ticks_of(os.getsid(0)), (), "")
    assert session_rss_bytes(me) >= rss_bytes(os.getpid())
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f").write_bytes(b"x" * 100_000)
    assert tree_bytes(tmp_path) >= 100_000
    assert rss_bytes(2**22 + 12345) is None


def test_until_takes_a_clock_time_or_a_span_and_names_a_bad_one():
    until = UntilType()
    now = time.time()
    assert 5390 <= until.convert("1h30m", None, None) - now <= 5410
    assert 0 < until.convert("06:30", None, None) - now <= 86400
    with pytest.raises(click.BadParameter, match="neither a clock time"):
        until.convert("soon", None, None)


def _report_json(
    folder, name: str, started_ms: int, recoveries: list[float | None], growth: float | None, lost: int | None
):
    run = folder / name
    run.mkdir(parents=True)
    report = {
        "scenario": "nightly-soak",
        "verdict": {"end_to_end": "effectively-exactly-once"},
        "outcome": "pass",
        "passed": True,
        "status": "complete",
        "expectations": [],
        "counts": {"acked": 6000, "lost": lost, "duplicated_deliveries": 3},
        "faults": [{"recovery_s": r} for r in recoveries],
        "timeline": {"start_ms": started_ms, "marks": {"workload_started": 0.0, "drained": 60.0}},
        "resources": {"processes": [{"name": "broker-1", "growth": growth}]},
    }
    (run / "report.json").write_text(json.dumps(report))


def test_the_index_shows_each_soak_and_the_trend_across_them(tmp_path):
    _report_json(tmp_path, "nightly-soak-1", 1, [10.0, 20.0, None, 30.0], 0.02, 0)
    _report_json(tmp_path, "nightly-soak-2", 2, [], None, None)
    html = write_index(tmp_path).read_text()
    assert "20.0 s / 29.8 s" in html and "+2.0%" in html  # recovery p50 / p99 of 10, 20, 30; the largest growth
    assert html.count("<svg") == 1 and "records/s until drained" in html
    runs = [json.loads((tmp_path / f"nightly-soak-{n}" / "report.json").read_text()) for n in (1, 2)]
    assert _throughput(runs[0]) == 100.0 and _recovery_percentiles(runs[1]) == (None, None)
