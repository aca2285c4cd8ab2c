"""The class-data-sharing archives `harness jars` trains are the ones the brokers and drivers really map.

-Xshare:on makes a JVM refuse to start when its archive cannot be used (a
classpath or JDK mismatch), where the default -Xshare:auto would start
silently without it.
"""

from __future__ import annotations

import pytest

from harness import cds, jars
from harness.cluster import EmbeddedCluster
from harness.cluster.embedded import BROKER_ROLE
from harness.spark.session import DRIVER_ROLE, driver_classpath, driver_java_options, spark_session


def test_no_archive_means_no_flags_and_a_trained_one_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_JARS_DIR", str(tmp_path))
    assert cds.java_options("kafka-broker", "a.jar") == []
    archive = cds.archive_path("kafka-broker", "a.jar")
    assert cds.archive_path("kafka-broker", "b.jar") != archive  # another classpath trains another archive
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"x")
    assert cds.java_options("kafka-broker", "a.jar") == [f"-XX:SharedArchiveFile={archive}", "-Xshare:auto"]
    monkeypatch.setenv("HARNESS_CDS", "0")
    assert cds.java_options("kafka-broker", "a.jar") == []


@pytest.mark.e2e
def test_the_broker_and_the_driver_map_their_trained_archives(tmp_path):
    assert cds.is_trained(BROKER_ROLE, jars.kafka_classpath()), "run `harness jars` (make setup trains the archives)"
    assert cds.is_trained(DRIVER_ROLE, driver_classpath())
    assert "-XX:SharedArchiveFile=" in driver_java_options()
    cluster = EmbeddedCluster.create(tmp_path / "cluster", brokers=1)
    cluster.extra_java_options = ["-Xshare:on"]
    with cluster:
        cluster.start(timeout=60)
        assert cluster.running_brokers()
    spark = spark_session("cds-test", conf={"spark.driver.extraJavaOptions": "-Xshare:on"})
    try:
        assert spark.range(5).count() == 5
        started_with = list(spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
        assert any(flag.startswith("-XX:SharedArchiveFile=") for flag in started_with)
        assert "-Xshare:on" in started_with
    finally:
        spark.stop()
