"""A real Spark standalone cluster started from the pyspark installation: executors in JVMs of their own, an
executor JVM and a whole worker SIGKILLed under a running pipeline, Spark's recovery seen in the history,
nothing lost with the upsert egress (counted from the egress's table), and no process left."""

from __future__ import annotations

import json
import os
import re

import pytest

from harness.checker.check import check_run
from harness.checker.counts import COUNTS, VERDICT
from harness.checker.fault_results import FAULTS
from harness.evidence.layout import RunLayout
from harness.process import Supervisor
from harness.runner.console import Console
from harness.runner.run import run_scenario
from harness.scenario import load_scenario
from harness.scenario.parse import parse_scenario
from harness.spark.standalone import StandaloneCluster
from tests.evidence_helpers import acked, egress_counts, why
from tests.test_faults import ROOT, history

# The module's run (a standalone cluster, an executor and a worker killed) takes over 6 minutes on a busy machine,
# and its first test's setup pays for it: more than pytest's default 600 s must be allowed there.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1200)]


def _alive(pid: int | None) -> bool:
    return (
        pid is not None
        and os.path.exists(f"/proc/{pid}")
        and "zombie" not in open(f"/proc/{pid}/status").read().lower()
    )


@pytest.fixture(scope="module")
def cluster_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("spark-cluster") / "run"
    summary = run_scenario(
        load_scenario(ROOT / "scenarios" / "spark-cluster-executor-loss.yaml"), run_dir, console=Console(quiet=True)
    )
    assert summary.status == "complete" and summary.faults_played == 2 and not summary.failed_streamlets, why(summary)
    return run_dir, history(run_dir), check_run(run_dir)


def test_the_drivers_run_their_executors_in_jvms_of_the_workers(cluster_run):
    run_dir, events, _ = cluster_run
    apps = {e["streamlet"]: e["app_id"] for e in events if e["event"] == "spark_application"}
    assert set(apps) == {"ingress", "egress"}
    added = [e for e in events if e["event"] == "executor_added"]
    assert {e["streamlet"] for e in added} == set(apps) and all(e["pid"] for e in added)
    settings = json.loads((run_dir / "streamlets" / "egress.json").read_text())
    started = {e["process"] for e in events if e["event"] == "process_started"}
    assert {"spark-master", "spark-worker-1"} <= started, started
    assert settings["master"].startswith("spark://127.0.0.1:") and settings["app_name"].startswith("harness-")


def test_an_executor_killed_mid_batch_is_replaced_and_its_tasks_retried(cluster_run):
    run_dir, events, report = cluster_run
    begun = next(e for e in events if e["event"] == "fault_begun" and e["kind"] == "executor-kill")
    ended = next(e for e in events if e["event"] == "fault_ended" and e["kind"] == "executor-kill")
    assert begun["target"] == "egress" and ended["new_executor"] != begun["executor"]
    # Spark's side, as the executor watch recorded it: the killed executor removed, a new one added, both of
    # the egress's application; the killed JVM is gone.
    removed = [
        e
        for e in events
        if e["event"] == "executor_removed" and e["app_id"] == begun["app_id"] and e["executor"] == begun["executor"]
    ]
    added = [
        e
        for e in events
        if e["event"] == "executor_added" and e["app_id"] == begun["app_id"] and e["executor"] == ended["new_executor"]
    ]
    assert removed and added and removed[0]["ts_ms"] >= begun["ts_ms"]
    # It was frozen while it ran a task and killed frozen: the task was lost with it, and another executor of the
    # application ran it again. Counted here from the executors' own logs in the run directory (a second attempt
    # of a task is "task N.1"); the fault's count, made while it waited, can only have seen fewer.
    assert begun["running_tasks"], "it was killed while it ran a task"
    logs = list(RunLayout(run_dir).spark_cluster.glob(f"*/{begun['app_id']}/*/stderr"))
    assert {p.parent.name for p in logs} >= {begun["executor"], ended["new_executor"]}, logs
    retries = [
        line
        for p in logs
        if p.parent.name != begun["executor"]
        for line in p.read_text(errors="replace").splitlines()
        if re.search(r"Running task \d+\.[1-9]\d* in stage", line)
    ]
    assert retries, "no task of the egress's application ran a second time"
    assert 1 <= ended["tasks_retried"] <= len(retries), ended
    # The driver's side, from its own log: it noticed the executor was lost.
    assert f"Lost executor {begun['executor']}" in (run_dir / "logs" / "streamlet-egress.log").read_text()
    fault = next(f for f in report[FAULTS] if f.kind == "executor-kill")
    assert fault.recovery_s is not None


def test_a_killed_worker_takes_its_executors_and_comes_back(cluster_run):
    _, events, report = cluster_run
    begun = next(e for e in events if e["event"] == "fault_begun" and e["kind"] == "worker-kill")
    ended = next(e for e in events if e["event"] == "fault_ended" and e["kind"] == "worker-kill")
    assert begun["scope"] == "cluster" and ended["new_pid"] != begun["pid"]
    lost = {tuple(x) for x in begun["executors"]}
    assert lost, "the cluster's only worker ran executors when it was killed"
    removed = {
        (e["app_id"], e["executor"])
        for e in events
        if e["event"] == "executor_removed" and e["ts_ms"] >= begun["ts_ms"]
    }
    assert lost <= removed
    fault = next(f for f in report[FAULTS] if f.kind == "worker-kill")
    assert fault.recovery_s is not None


def test_nothing_is_lost_and_no_spark_process_is_left(cluster_run):
    run_dir, events, report = cluster_run
    stored = egress_counts(run_dir, "egress", "records")
    assert set(stored) == acked(run_dir) and set(stored.values()) == {1}
    assert report[COUNTS].lost == 0 and report[VERDICT] in ("exactly-once", "effectively-exactly-once")
    pids = [e.get("pid") for e in events if e["event"] in ("process_started", "executor_added")]
    assert pids and not [p for p in pids if _alive(p)]


@pytest.mark.long
def test_on_a_master_of_ones_own_the_run_brings_its_own_applications_and_leaves_the_cluster_running(tmp_path):
    """A cluster the harness did not start (here one the test starts): the scenario names its master; the run's
    applications are named after the run, and the master and worker are still there, untouched, afterwards."""
    with Supervisor(tmp_path / "theirs-pids") as theirs_supervisor:
        theirs = StandaloneCluster(theirs_supervisor, tmp_path / "theirs", tmp_path / "theirs-logs", 1).start()
        scenario = parse_scenario(
            {
                "name": "own-master",
                "cluster": {"spark": {"master": theirs.master_url}},
                "blueprint": {
                    "streamlets": {
                        "ingress": {"kind": "ingress"},
                        "egress": {"kind": "egress", "settings": {"mode": "upsert"}},
                    },
                    "connections": {"ingress.out": ["egress.in"]},
                },
                "workload": {"rate": 50, "duration_s": 8, "keys": 4},
            }
        )
        run_dir = tmp_path / "run"
        summary = run_scenario(scenario, run_dir, console=Console(quiet=True))
        assert summary.status == "complete" and not summary.failed_streamlets, why(summary)
        status = theirs.status()
        assert theirs.master.running() and all(w.running() for w in theirs.worker_procs.values())
        names = {a["name"] for a in status["activeapps"] + status["completedapps"]}
        assert names == {f"harness-{run_dir.name}-ingress", f"harness-{run_dir.name}-egress"}
        assert not [
            e for e in history(run_dir) if e["event"] == "process_started" and e["process"].startswith("spark-")
        ]
    stored = egress_counts(run_dir, "egress", "records")
    assert set(stored) == acked(run_dir) and check_run(run_dir)[VERDICT] == "exactly-once"
