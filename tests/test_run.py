"""`harness run` as a user runs it: validation first, then a clean stop on Ctrl-C (its report written), and
`harness clean` after the harness itself was SIGKILLed, then a report that calls nothing lost that was in
flight. No process may remain in any case."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from harness.evidence.history import BUDGET_REACHED
from harness.process.supervisor import recorded_processes, session_members, stop_all_recorded
from harness.waiting import wait_for
from tests.conftest import HARNESS, run_harness
from tests.test_scenario import GOOD

SCENARIO = GOOD.replace("rate: 50, duration_s: 5", "rate: 100, duration_s: 300")


def left_running(run_dir: Path) -> list:
    records = recorded_processes(run_dir / "pids") + recorded_processes(run_dir / "cluster" / "pids")
    return [r for r in records if session_members(r)]


def history(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]


def start_run(tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(SCENARIO)
    run_dir = tmp_path / "run"
    proc = subprocess.Popen(
        HARNESS + ["run", str(scenario), "--out", str(run_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    wait_for(
        lambda: (run_dir / "acks.csv").exists() and (run_dir / "acks.csv").stat().st_size > 1000,
        timeout=300,
        what="the workload to flow",
        abort=lambda: proc.poll() is not None and f"harness exited: {proc.stderr.read()}",
    )
    return proc, run_dir


def test_bad_scenario_exits_2_with_one_line_and_starts_nothing(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(SCENARIO + "faults:\n  - {kind: kill-driver, target: processor}\n")
    result = run_harness("run", str(path), "--out", str(tmp_path / "run"))
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"harness: error: {path}: faults[0].target: unknown streamlet 'processor' (declared: ingress, egress)"
    )
    assert not (tmp_path / "run").exists()


def test_a_fault_the_workload_cannot_hold_is_refused_in_one_line_and_starts_nothing(tmp_path):
    path = tmp_path / "late.yaml"
    path.write_text(GOOD + "faults:\n  - {kind: kill-driver, target: egress, start_s: 40, at: in-flight}\n")
    read = run_harness("validate", str(path))
    assert read.returncode == 2 and read.stdout.strip() == (
        f"bad  {path}: faults[0]: its start at 40s is not within the workload of 5s (workload.duration_s): it would "
        "not be played"
    )
    # A --duration shorter than the scenario's: smoke's first rule fires at 12 s and, 25 s later, again (+/- 3 s).
    shortened = run_harness("run", "scenarios/smoke.yaml", "--duration", "20", "--out", str(tmp_path / "run"))
    assert shortened.returncode == 2 and shortened.stderr.strip() == (
        "harness: error: faults[0] (kill-driver processor): its firing 2 of 2 at 37s plus its jitter 3s is not "
        "within the workload of 20s: it would not be played"
    )
    assert not (tmp_path / "run").exists()


@pytest.mark.e2e
# Both end in the CLI's one handler (KeyboardInterrupt); SIGTERM, what CI runners and orchestrators send, in make test
@pytest.mark.parametrize(
    "sig",
    [pytest.param(signal.SIGINT, id="ctrl-c", marks=pytest.mark.long), pytest.param(signal.SIGTERM, id="sigterm")],
)
def test_ctrl_c_or_sigterm_stops_the_run_cleanly_and_keeps_the_evidence(tmp_path, sig):
    proc, run_dir = start_run(tmp_path)
    try:
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=180)
        assert proc.returncode == 130, stderr
        assert "interrupted" in stderr
        events = [e["event"] for e in history(run_dir)]
        assert events[-2:] == ["run_interrupted", "run_ended"]
        assert json.loads((run_dir / "run.json").read_text())["status"] == "interrupted"
        assert json.loads((run_dir / "run.json").read_text())["acked"] > 0
        assert json.loads((run_dir / "report.json").read_text())["outcome"] == "unknown"  # written, and unfinished
        assert not left_running(run_dir)
    finally:
        proc.kill()
        stop_all_recorded(run_dir / "pids")
        stop_all_recorded(run_dir / "cluster" / "pids")


@pytest.mark.e2e
def test_after_the_harness_is_sigkilled_the_evidence_is_readable_and_clean_stops_the_rest(tmp_path):
    proc, run_dir = start_run(tmp_path)
    try:
        proc.kill()
        proc.wait(timeout=10)
        orphans = left_running(run_dir)
        assert {r.name for r in orphans} >= {"broker-1", "generator", "streamlet-ingress", "streamlet-egress"}
        assert history(run_dir)[-1]["event"] != "run_ended"  # every line written so far parses
        time.sleep(5)  # its drivers and generator go on without it for a while
        result = run_harness("clean", str(run_dir))
        assert result.returncode == 0 and result.stdout.startswith("stopped ")
        assert not left_running(run_dir)
        assert run_harness("clean", str(run_dir)).stdout.strip() == "nothing was running"
        # Judged from what it left: nothing that was merely in flight is lost (harness/checker/unfinished.py).
        report = run_harness("report", str(run_dir))
        assert report.returncode == 3, report.stdout + report.stderr
        judged = json.loads((run_dir / "report.json").read_text())
        assert judged["outcome"] == "unknown" and judged["unfinished"].startswith("run.json missing")
        assert judged["counts"]["lost"] == 0 and judged["counts"]["undelivered"] is not None, judged["counts"]
        assert set(judged["verdict"]["hops"].values()) == {"unknown"} and judged["verdict"]["end_to_end"] == "unknown"
    finally:
        stop_all_recorded(run_dir / "pids")
        stop_all_recorded(run_dir / "cluster" / "pids")


def test_clean_of_a_missing_run_directory_is_one_line_exit_2(tmp_path):
    result = run_harness("clean", str(tmp_path / "nope"))
    assert (
        result.returncode == 2
        and result.stderr.strip() == f"harness: error: {tmp_path / 'nope'}: no such run directory"
    )


def evidence_bytes_by_du(run_dir: Path) -> int:
    """The run directory's disk use but the brokers' data, as du counts it (not the harness's own walk)."""
    du = subprocess.run(
        ["du", "-s", "--block-size=1", "--exclude=./cluster", "."], cwd=run_dir, capture_output=True, text=True
    )
    return int(du.stdout.split()[0])


BUDGET_MB = 60
BUDGETED = GOOD.replace("rate: 50, duration_s: 5", "rate: 100, duration_s: 90, payload_bytes: 10000") + (
    "faults:\n  - {kind: kill-driver, target: egress, start_s: 75}\n"
)


@pytest.mark.e2e
def test_an_evidence_budget_ends_the_workload_early_and_the_run_is_judged_as_it_runs(tmp_path):
    # 10 kB records at 100/s: the recordings and the store grow about 3 MB a second, so the budget is reached well
    # before the 90 s planned, and before the fault at 75 s.
    scenario, run_dir = tmp_path / "s.yaml", tmp_path / "run"
    scenario.write_text(BUDGETED)
    try:
        result = run_harness(
            "run", str(scenario), "--out", str(run_dir), "--evidence-budget", f"{BUDGET_MB}MB", "--judge-every", "10"
        )
        assert result.returncode == 3, result.stdout + result.stderr  # unknown: the run was cut short
        events = history(run_dir)
        reached = [e for e in events if e["event"] == BUDGET_REACHED]
        assert len(reached) == 1 and reached[0]["budget_bytes"] == BUDGET_MB * 10**6
        stopped = [e for e in events if e["event"] == "workload_stopped"]
        assert len(stopped) == 1 and "of its budget" in stopped[0]["reason"]
        skipped = [e for e in events if e["event"] == "fault_skipped"]
        assert [(e["kind"], "of its budget" in e["reason"]) for e in skipped] == [("kill-driver", True)]
        # Within 10% of the budget: the drain stores what the streamlets and the recorder had not reached, an
        # estimate a loaded machine can pass (two fresh-clone runs beside another suite, load 15-24: 60.9 and 64.3 MB)
        assert evidence_bytes_by_du(run_dir) <= 1.1 * BUDGET_MB * 10**6
        report = json.loads((run_dir / "report.json").read_text())
        acked = report["counts"]["acked"]
        assert 0 < acked < 9000 and report["outcome"] == "unknown" and report["verdict"]["end_to_end"] == "exactly-once"
        assert any("the workload ended early: the run's evidence reached" in d for d in report["doubts"])
        use = report["resources"]  # the samples every 15 s, and the budget, as the report shows them
        assert use["evidence_budget_bytes"] == BUDGET_MB * 10**6
        # a sample during the drain may hold what was in flight when the workload ended (a store's write-ahead log
        # before its checkpoint): not far above the budget
        assert 0 < use["evidence_max_bytes"] <= 1.25 * BUDGET_MB * 10**6
        periods = report["periods"]["periods"]  # of 5 s for the 90 s planned; those after the end unknown, unmeasured
        assert report["periods"]["length_s"] == 5 and len(periods) == 18
        sent = [p for p in periods if p["counts"]["acked"]]
        assert sum(p["counts"]["acked"] for p in sent) == acked
        assert {p["verdict"] for p in sent} == {"exactly-once"}
        assert {(p["verdict"], p["counts"]["lost"]) for p in periods[len(sent) :]} == {("unknown", None)}
        # Judged as it ran: each line the periods so far, provisional; those it judged, the final report judged alike.
        judged = [json.loads(line) for line in (run_dir / "judged.jsonl").read_text().splitlines()]
        # a judgment that found no egress evidence to read at that moment (a store not made yet, or mid-write: a gap)
        # has no periods
        assert any(line["status"] == "running" and line["periods"].get("provisional") for line in judged), judged
        final = {p["start_ms"]: p["verdict"] for p in periods}
        for line in (line for line in judged if line["periods"]):
            assert line["periods"]["length_s"] == 5
            for p in line["periods"]["periods"]:
                assert p["verdict"] in ("unknown", final[p["start_ms"]]), (p, final)
        # It saw the run's records as they came (whether a period was whole before the workload ended depends on how
        # busy the machine is: a loaded one has them all still awaiting delivery).
        assert max((line["counts"] or {}).get("acked") or 0 for line in judged) > 0
        assert "judged at " in result.stdout and "ending the workload early: " in result.stdout
        assert not left_running(run_dir)
    finally:
        stop_all_recorded(run_dir / "pids")
        stop_all_recorded(run_dir / "cluster" / "pids")
