"""A real Structured Streaming query through the real Kafka connector, stopped and restarted."""

from __future__ import annotations

import pytest

from harness.demo import run_demo
from harness.evidence.checkpoint import last_planned

pytestmark = pytest.mark.e2e


@pytest.mark.long  # a driver restarted from its checkpoint under a run: test_sinks.py
def test_query_restarts_from_its_checkpoint_and_continues(tmp_path):
    messages = []
    result = run_demo(tmp_path, records=300, say=messages.append)

    assert result.stop_exit_code == 0, "SIGTERM should stop the driver gracefully"
    assert (result.sent, result.received, result.lost, result.duplicated) == (600, 600, 0, 0)
    # The restart began where the first run's last batch ended: 300 records in.
    resumed = result.resumed_from["offsets"][result.source]
    assert sum(resumed.values()) == 300
    # And the checkpoint now accounts for all 600, in later batches.
    final = last_planned(tmp_path / "checkpoints" / "relay")
    assert sum(final["offsets"][result.source].values()) == 600
    assert final["batch"] > result.resumed_from["batch"]
    assert result.leftover_processes == []
    assert any("restarted" in m for m in messages)


@pytest.mark.long  # make test runs on a cluster one runs in test_security.py
def test_against_an_external_cluster_only_namespaced_topics_are_created(tmp_path):
    from harness.cluster import EmbeddedCluster

    with EmbeddedCluster.create(tmp_path / "theirs", brokers=1) as theirs:
        theirs.start()
        with theirs.admin() as admin:
            admin.create_topic("payments", partitions=1)
            before = admin.topics()
        result = run_demo(tmp_path / "demo", records=100, say=lambda m: None, bootstrap=theirs.bootstrap_servers)
        with theirs.admin() as admin:
            added = admin.topics() - before
            assert admin.offsets(["payments"])[0].log_end == 0
    assert (result.lost, result.duplicated) == (0, 0)
    assert added == {result.source, result.sink}
    assert all(t.startswith("harness-") for t in added)
    assert not (tmp_path / "demo" / "cluster").exists()
