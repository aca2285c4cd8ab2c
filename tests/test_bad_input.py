"""Bad input and missing prerequisites: one clear line, exit code 2, no traceback, nothing started."""

from __future__ import annotations

import os

import pytest

from harness.errors import HarnessError
from tests.conftest import refusing_port, run_harness


def _env(**changes):
    env = dict(os.environ)
    for key, value in changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def assert_one_line_error(result, *fragments):
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("harness: error: ")
    for fragment in fragments:
        assert fragment in lines[0]
    assert "Traceback" not in result.stderr


def test_java_missing(tmp_path):
    result = run_harness("cluster", "up", "--dir", str(tmp_path / "c"), env=_env(PATH=str(tmp_path), JAVA_HOME=None))
    assert_one_line_error(result, "java not found")
    assert not (tmp_path / "c" / "pids").exists()


def test_kafka_jars_missing(tmp_path):
    result = run_harness(
        "cluster", "up", "--dir", str(tmp_path / "c"), env=_env(HARNESS_JARS_DIR=str(tmp_path / "nojars"))
    )
    assert_one_line_error(result, "kafka jars missing in", "harness jars")
    assert not (tmp_path / "c" / "pids").exists()


def test_maven_missing_when_jars_must_be_fetched(tmp_path):
    result = run_harness("jars", env=_env(HARNESS_JARS_DIR=str(tmp_path / "nojars"), PATH=str(tmp_path)))
    assert_one_line_error(result, "mvn not found")


def test_status_of_a_directory_without_a_cluster(tmp_path):
    result = run_harness("cluster", "status", "--dir", str(tmp_path / "nothing"))
    assert_one_line_error(result, "no embedded cluster in", "nothing")


def test_corrupt_cluster_state(tmp_path):
    (tmp_path / "cluster.json").write_text("{not json")
    result = run_harness("cluster", "down", "--dir", str(tmp_path))
    assert_one_line_error(result, "cluster.json", "unreadable cluster state")


def test_bad_broker_count_is_a_usage_error(tmp_path):
    result = run_harness("cluster", "up", "--brokers", "2", "--dir", str(tmp_path / "c"))
    assert result.returncode == 2
    assert "'2' is not one of '1', '3'" in result.stderr
    assert "Traceback" not in result.stderr


def test_unreachable_broker_is_a_clear_error():
    from harness.cluster import KafkaAdmin

    with refusing_port() as port, pytest.raises(HarnessError, match=f"no Kafka broker reachable at 127.0.0.1:{port}"):
        KafkaAdmin(f"127.0.0.1:{port}", connect_timeout_ms=1000)


def test_spark_session_refuses_missing_connector(tmp_path, monkeypatch):
    from harness.spark.session import spark_session
    from harness.spark.versions import own_version

    monkeypatch.setenv("HARNESS_JARS_DIR", str(tmp_path))
    with pytest.raises(HarnessError, match=f"spark-kafka-{own_version()} jars missing"):
        spark_session("nothing")
