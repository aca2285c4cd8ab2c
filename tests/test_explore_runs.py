"""`harness explore` for real (a broker, Spark drivers), on the shipped append-egress scenario with a space narrowed
to one fault aimed after a write: the search finds the failure, the shrinking keeps the single kill of the egress,
and the replay's own evidence shows the batch stored twice; under the same space an upsert egress passes and the
search says what it tried. Longer searches (several faults, the 20-minute budget) are bench/explore.py."""

from __future__ import annotations

import json

import pytest
import yaml

from harness.cluster import EmbeddedCluster, KafkaAdmin
from harness.scenario.shipped import scenario_path
from tests.conftest import run_harness
from tests.evidence_helpers import acked, egress_counts

pytestmark = [pytest.mark.e2e, pytest.mark.long]  # a search: its cases are unit-tested in test_explore.py


def _scenario(tmp_path, mode: str, bootstrap_servers: str | None = None):
    raw = yaml.safe_load(scenario_path("explore-append").read_text())
    if bootstrap_servers:
        raw["cluster"] = {"bootstrap_servers": bootstrap_servers}
    raw["name"] = f"explore-{mode}"
    raw["blueprint"]["streamlets"]["egress"]["settings"]["mode"] = mode
    raw["explore"] = {**raw["explore"], "faults": 1, "moments": ["after-write"], "workload_s": 10}
    raw["workload"]["workers"] = 2  # a generator of two processes (acks/worker-NN/), counted here as one log
    path = tmp_path / f"{mode}.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def test_explore_finds_the_kill_after_a_write_of_an_append_egress_and_its_replay_stores_the_batch_twice(tmp_path):
    out = tmp_path / "out"
    # seed 2 draws a restart delay under 2 s (nothing to halve): the search, the schedule without the fault, one replay
    args = ("explore", str(_scenario(tmp_path, "append")), "--budget", "6m", "--seed", "2", "--runs", "1")
    args += ("--replays", "1")
    result = run_harness(*args, "--out", str(out), timeout=600)
    assert result.returncode == 1, result.stdout + result.stderr
    data = json.loads((out / "explore.json").read_text())
    assert data["runs"][0]["outcome"] == "fail", data["runs"]  # the space holds only failing schedules
    [fault] = data["minimal"]["faults"]
    assert (fault["kind"], fault["target"]) == ("kill-driver", "egress"), fault
    assert data["minimal"]["complete"] and data["minimal"]["reproduced"] == 1.0
    # Shrinking tried the schedule without the fault, which passed.
    assert any(step["faults"] == [] and not step["kept"] for step in data["minimal"]["trace"]), data["minimal"]
    assert "counterexample: fails end_to_end (duplicated in state, duplicated deliveries)" in result.stdout
    assert f"replay: harness run {out / 'minimal.yaml'}" in result.stdout

    # The replay, counted here from its egress table: the held batch's records twice, nothing lost.
    replay = out / data["runs"][-1]["report"].removesuffix("/report.html")
    assert data["runs"][-1]["phase"] == "replay"
    stored = egress_counts(replay, "egress", "records")
    twice = {r for r, n in stored.items() if n > 1}
    assert twice and set(stored) == acked(replay)
    report = json.loads((replay / "report.json").read_text())
    assert report["verdict"]["end_to_end"] == "at-least-once"
    assert report["counts"]["duplicated_in_state"] == len(twice) and report["counts"]["lost"] == 0
    minimal = yaml.safe_load((out / "minimal.yaml").read_text())
    assert [(f["kind"], f["target"]) for f in minimal["faults"]] == [("kill-driver", "egress")]


def test_explore_of_an_upsert_egress_on_a_shared_cluster_finds_nothing_and_says_what_it_tried(tmp_path):
    out = tmp_path / "out"
    with EmbeddedCluster.create(tmp_path / "cluster", brokers=1) as cluster:
        cluster.start()
        scenario = _scenario(tmp_path, "upsert", cluster.bootstrap_servers)
        result = run_harness("explore", str(scenario), "--budget", "20s", "--out", str(out))
        with KafkaAdmin(cluster.bootstrap_servers) as admin:
            topics = admin.topics()
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"runs share the cluster at {cluster.bootstrap_servers}: each starts once it is healthy" in result.stdout
    assert "no counterexample: 1 schedule(s) of up to 1 fault(s) (kill-driver), 0 could not be judged" in result.stdout
    data = json.loads((out / "explore.json").read_text())
    assert [r["outcome"] for r in data["runs"]] == ["pass"] and data["minimal"] is None
    assert not (out / "minimal.yaml").exists()
    # the run's topics were its own, in its namespace
    assert {t for t in topics if not t.startswith("__")} and all(
        t.startswith("harness.") for t in topics if not t.startswith("__")
    ), topics
