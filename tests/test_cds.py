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
from harness.spark.session import (
    DRIVER_ROLE,
    LAUNCHER_ROLE,
    driver_classpath,
    driver_java_options,
    launcher_classpath,
    launcher_env,
    spark_session,
)


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
    assert cds.is_trained(LAUNCHER_ROLE, launcher_classpath())
    assert "-XX:SharedArchiveFile=" in driver_java_options()
    assert (
        f"-XX:SharedArchiveFile={cds.archive_path(LAUNCHER_ROLE, launcher_classpath())}"
        in launcher_env()["SPARK_LAUNCHER_OPTS"]
    )
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
        # the connector is on the JVM's own classpath, whose classes the archive holds whole (not only on spark.jars)
        sparks_loader = spark._jvm.java.lang.Thread.currentThread().getContextClassLoader()  # spark.jars' loader
        for name in (
            "org.apache.kafka.clients.producer.KafkaProducer",
            "org.apache.spark.sql.kafka010.KafkaSourceProvider",
        ):
            assert sparks_loader.loadClass(name).getClassLoader().getName() == "app", name
    finally:
        spark.stop()


def test_the_signed_compiler_jars_are_copied_once_without_their_signature(tmp_path, monkeypatch):
    import zipfile

    from harness.spark import unsigned

    monkeypatch.setenv("HARNESS_JARS_DIR", str(tmp_path / "cache"))
    pyspark_jars = tmp_path / "jars"
    pyspark_jars.mkdir()
    with zipfile.ZipFile(pyspark_jars / "janino-3.1.9.jar", "w") as jar:
        for name in (
            "META-INF/MANIFEST.MF",
            "META-INF/DUMMY.SF",
            "META-INF/DUMMY.DSA",
            "org/codehaus/janino/Java.class",
        ):
            jar.writestr(name, name)
    (pyspark_jars / "spark-core_2.13-4.0.0.jar").write_bytes(b"not copied")
    [copy] = unsigned.copies(pyspark_jars)
    assert copy == tmp_path / "cache" / "unsigned" / "janino-3.1.9.jar"
    with zipfile.ZipFile(copy) as jar:
        assert sorted(jar.namelist()) == ["META-INF/MANIFEST.MF", "org/codehaus/janino/Java.class"]
        assert jar.read("org/codehaus/janino/Java.class") == b"org/codehaus/janino/Java.class"
    made = copy.stat().st_mtime_ns
    assert unsigned.classpath(pyspark_jars) == str(copy) and copy.stat().st_mtime_ns == made  # made once


def test_the_drivers_jit_mode_is_one_of_three(monkeypatch):
    from harness.errors import HarnessError
    from harness.jit import jit_options
    from harness.spark.session import DRIVER_JIT

    monkeypatch.delenv("HARNESS_DRIVER_JIT", raising=False)
    assert jit_options(DRIVER_JIT) == ["-XX:TieredStopAtLevel=1"]
    monkeypatch.setenv("HARNESS_DRIVER_JIT", "deferred")
    assert "-XX:Tier4InvocationThreshold=50000" in jit_options(DRIVER_JIT)
    monkeypatch.setenv("HARNESS_DRIVER_JIT", "fast")
    with pytest.raises(HarnessError, match="HARNESS_DRIVER_JIT='fast': expected one of deferred, quick, full"):
        jit_options(DRIVER_JIT)


def test_the_launchers_flags_are_for_the_harnesss_own_spark_and_ones_own_are_kept(monkeypatch):
    from harness.spark.versions import SparkRuntime

    monkeypatch.delenv("SPARK_LAUNCHER_OPTS", raising=False)
    flags = launcher_env()["SPARK_LAUNCHER_OPTS"].split()
    assert "-XX:+UseSerialGC" in flags and "-Xlog:all=warning:stderr" in flags  # its stdout is the driver's command
    other = SparkRuntime(version="3.5.7", python="/elsewhere/bin/python", own=False)
    assert launcher_env(other) == {}
    monkeypatch.setenv("SPARK_LAUNCHER_OPTS", "-Xmx64m")
    assert launcher_env() == {}


def test_the_brokers_jit_mode_follows_its_own_variable(monkeypatch, tmp_path):
    from harness.cluster.config import NodeSpec
    from harness.cluster.embedded import EmbeddedCluster

    broker = EmbeddedCluster(tmp_path, "id", [NodeSpec(1, 1, 2)], 256, "4.0.0").brokers[0]
    monkeypatch.delenv("HARNESS_BROKER_JIT", raising=False)
    assert "-XX:TieredStopAtLevel=1" in broker.java_arguments("cp")
    monkeypatch.setenv("HARNESS_BROKER_JIT", "full")
    assert not [a for a in broker.java_arguments("cp") if a.startswith(("-XX:Tier", "-XX:TieredStop"))]
    monkeypatch.setenv("HARNESS_DRIVER_JIT", "full")  # the drivers' variable is not the brokers'
    monkeypatch.delenv("HARNESS_BROKER_JIT")
    assert "-XX:TieredStopAtLevel=1" in broker.java_arguments("cp")
