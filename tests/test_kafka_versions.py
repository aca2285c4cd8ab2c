"""The Kafka the embedded brokers run (harness/cluster/releases.py): a new cluster formatted with feature levels runs
at them, as its brokers answer; a line is told by the highest metadata.version its brokers support; a run on
another release is judged as an independent count says. The refusals: tests/test_scenario.py; a cluster one runs of
Kafka 3.9 (its line in versions.json): tests/test_security.py; the matrices: docs/kafka-versions-report.md."""

from __future__ import annotations

import json

import pytest
import yaml

from harness.cluster import EmbeddedCluster, KafkaAdmin, releases
from harness.cluster.releases import ELIGIBLE_LEADERS, TRANSACTIONS
from tests.conftest import run_harness
from tests.evidence_helpers import independent_counts
from tests.test_faults import ROOT


def test_a_line_is_the_newest_whose_new_clusters_metadata_version_its_brokers_support():
    levels = {line: known.metadata_level for line, known in releases.LINES.items()}
    assert [releases.line_reporting(level) for level in levels.values()] == list(levels)
    assert releases.line_reporting(levels["4.3"] + 2) == "4.3"  # a 4.4 preview level a 4.3 broker cannot have
    assert releases.line_reporting(levels["3.9"] - 1) is None


@pytest.mark.e2e
def test_a_cluster_formatted_with_feature_levels_runs_at_them_and_supports_what_its_line_says(tmp_path):
    cluster = EmbeddedCluster.create(tmp_path / "c", features={TRANSACTIONS: 1, ELIGIBLE_LEADERS: 0})
    try:
        cluster.start()
        with KafkaAdmin(cluster.admin_access()) as admin:
            features = admin.features()
    finally:
        cluster.close()
    known = releases.line(cluster.kafka_version)
    assert cluster.kafka_version == releases.default_version()
    assert (features["finalized"][TRANSACTIONS], features["finalized"][ELIGIBLE_LEADERS]) == (1, 0)
    assert (
        features["supported"]["metadata.version"] == features["finalized"]["metadata.version"] == known.metadata_level
    )
    assert {name: features["supported"][name] for name in known.features} == {
        name: highest for name, (highest, _) in known.features.items()
    }
    saved = json.loads((tmp_path / "c" / "cluster.json").read_text())
    assert saved["options"]["features"] == {TRANSACTIONS: 1, ELIGIBLE_LEADERS: 0}


@pytest.mark.long  # make test judges a run on a cluster of Kafka 3.9 it did not start (tests/test_security.py)
@pytest.mark.e2e
@pytest.mark.timeout(900)
def test_a_transactional_run_on_kafka_4_0_at_transaction_version_1_under_broker_kills_counts_as_counted_here(
    tmp_path,
):
    raw = yaml.safe_load((ROOT / "scenarios" / "matrix" / "kafka-base.yaml").read_text())
    raw["cluster"]["kafka"] = {"version": "4.0.2", "features": {TRANSACTIONS: 1}}
    raw["workload"]["transactions"] = {"records": 50, "abort_every": 3}
    path = tmp_path / "kafka-4.0.yaml"  # the base names no file of its own folder
    path.write_text(yaml.safe_dump(raw))
    done = run_harness("run", str(path), "--out", str(tmp_path / "run"), timeout=800)
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]
    run_dir = tmp_path / "run"
    versions = json.loads((run_dir / "versions.json").read_text())
    assert (versions["kafka_broker"], versions["kafka_features"][TRANSACTIONS]) == ("4.0.2", 1)
    report = json.loads((run_dir / "report.json").read_text())
    assert {
        k: report["counts"][k] for k in ("lost", "duplicated_in_state", "duplicated_deliveries", "phantom")
    } == independent_counts(run_dir)


def test_a_kafka_release_maven_does_not_serve_is_one_line_and_leaves_no_cluster(tmp_path):
    done = run_harness("cluster", "up", "--kafka-version", "4.0.9", "--dir", str(tmp_path / "c"), timeout=300)
    assert done.returncode == 2 and not (tmp_path / "c").exists()
    assert done.stderr.strip() == (
        "harness: error: fetching kafka-4.0.9 jars with Maven failed: org.apache.kafka:kafka_2.13:jar:4.0.9 is not "
        "served by the Maven repositories this machine reaches"
    )
