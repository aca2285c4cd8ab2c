"""SparkSession factory: the Kafka connector on the classpath, sized for a small machine.

Its configuration goes to the streamlet drivers (pipelines/) in their settings; the session itself is used
by the harness's own Spark processes (the training driver, the relay demonstration) and by tests. Any
master URL is accepted; the default is local[1], because three drivers and a broker share two cores.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

from harness import cds, jars
from harness.errors import HarnessError
from harness.jit import QUICK, jit_options
from harness.spark import unsigned, versions
from harness.spark.versions import SparkRuntime

DEFAULT_MASTER = "local[1]"
DRIVER_ROLE = "spark-driver"  # the drivers' class-data-sharing archive (harness.cds)
LAUNCHER_ROLE = "spark-launcher"  # spark-submit's own JVM's archive

SMALL_MACHINE_CONF: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.memory": "512m",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.session.timeZone": "UTC",
    # State store and checkpoint maintenance are cheap at this scale.
    "spark.sql.streaming.minBatchesToRetain": "20",
    "spark.sql.streaming.stateStore.maintenanceInterval": "10s",
}
# Checkpoint files through Hadoop's FileSystem, not its FileContext (the class's name is the drivers' Spark line's,
# harness/spark/lines.py). Without Hadoop's native library, FileContext's rename ran a `readlink` process for each
# file a batch commits (about four a second per driver); the same files are written to a temporary name and renamed.
# Measured: a 40-second run of three drivers took 11% less CPU.
CHECKPOINT_MANAGER = "spark.sql.streaming.checkpointFileManagerClass"


def check_connector_version(runtime: SparkRuntime | None = None) -> str:
    """The connector jar's version, after checking it equals the drivers' pyspark's (the harness's own by default)."""
    runtime = runtime or versions.runtime(None)
    connector = runtime.connector_version()
    if connector != runtime.version:
        raise HarnessError(
            f"Spark Kafka connector {connector} in {jars.set_dir(runtime.jars())} does not match "
            f"pyspark {runtime.version}: run "
            + ("`harness jars`" if runtime.own else f"`harness spark-env {runtime.version}`")
        )
    return connector


def _pyspark_jars() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def _own_extra_classpath() -> str:
    """spark.driver.extraClassPath of the harness's own Spark: the unsigned compiler jars (harness.spark.unsigned)
    and the Kafka connector's jars. Class-data sharing archives classes of the JVM's own classpath whole; classes of
    spark.jars come through Spark's class loader, which reads and checks every one from its jar on each start and
    which the archive's training cannot link (about 300 of Kafka's classes were left out as "not linked")."""
    connector = jars.jar_set(versions.runtime(None).jars())
    return ":".join([unsigned.classpath(_pyspark_jars()), *(str(p) for p in connector)])


def driver_classpath() -> str:
    """What the driver JVM's own classpath is made of: the extra classpath above, then pyspark's jars. The CDS
    archive is keyed by it."""
    import pyspark

    return f"{pyspark.__version__}:{_own_extra_classpath()}:{_pyspark_jars()}"


# The drivers' JIT, by HARNESS_DRIVER_JIT (harness.jit). Measured here (bench/driver_phases.py,
# bench/pipeline_throughput.py): a driver's start to its first batch 3.8 s quick, 4.5 s deferred; 600,000 records
# through the pipeline at 13,700-13,900 records/s quick, 17,300-18,900 deferred.
DRIVER_JIT = "HARNESS_DRIVER_JIT"
# Serial collection: one core's worth of driver has nothing to gain from a concurrent collector's threads and
# barriers. Measured with bench/pipeline_throughput.py's pipeline, 600,000 records: 15,440 records/s against 12,887
# with G1 (C1 only in both).
GC_OPTIONS = ["-XX:+UseSerialGC"]
# Spark's WARN, and each Kafka producer's settings as it is created (harness/spark/log4j2.properties).
LOGGING_OPTIONS = [f'"-Dlog4j2.configurationFile={Path(__file__).with_name("log4j2.properties")}"']


def driver_java_options(extra: str = "", runtime: SparkRuntime | None = None) -> str:
    """The driver JVM's flags: the CDS archive when trained (for the harness's own Spark: the archive is of its
    classes), the collector's, the JIT's, its logging, then `extra` (a job's own logging file wins)."""
    shared = cds.java_options(DRIVER_ROLE, driver_classpath()) if runtime is None or runtime.own else []
    return " ".join([*shared, *GC_OPTIONS, *jit_options(DRIVER_JIT), *LOGGING_OPTIONS, extra]).strip()


# bin/spark-class reads the driver's command from the launcher's stdout: the JVM's own warnings (an archive it cannot
# map) go to stderr instead.
LAUNCHER_LOG = ["-Xlog:disable", "-Xlog:all=warning:stderr"]
LAUNCHER_OPTS = "SPARK_LAUNCHER_OPTS"  # the variable bin/spark-class passes to it


def launcher_classpath() -> str:
    """The classpath of spark-submit's own JVM (bin/spark-class: pyspark's jars folder), which keys its archive."""
    import pyspark

    return f"{pyspark.__version__}:{_pyspark_jars()}/*"


def launcher_env(runtime: SparkRuntime | None = None, archive_flags: list[str] | None = None) -> dict[str, str]:
    """SPARK_LAUNCHER_OPTS for the harness's own Spark: before every driver's JVM, bin/spark-class runs a small JVM
    (org.apache.spark.launcher.Main) that only computes the driver's command line. From its archive, with C1 and
    the serial collector, it takes 0.06 CPU seconds instead of 0.2, most of which went to opening pyspark's 250
    jars in search of its classes. `archive_flags` replace the trained archive's (the training's own); without
    them one's own SPARK_LAUNCHER_OPTS is left as it is."""
    if (runtime is not None and not runtime.own) or (archive_flags is None and LAUNCHER_OPTS in os.environ):
        return {}
    archive = cds.java_options(LAUNCHER_ROLE, launcher_classpath()) if archive_flags is None else archive_flags
    return {LAUNCHER_OPTS: " ".join([*archive, *GC_OPTIONS, *QUICK, *LAUNCHER_LOG])}


def session_conf(
    conf: Mapping[str, str] | None = None, jar_sets: tuple[str, ...] = (), runtime: SparkRuntime | None = None
) -> dict[str, str]:
    """The configuration of a SparkSession that can read and write Kafka, after checking the connector and Java.

    `conf` overrides the defaults above; spark.jars always includes the connector (of `runtime`'s Spark: the
    harness's own by default), then the jars of `jar_sets` (a streamlet's spark_jars), both built for that Spark.
    A streamlet driver is given this in its settings (pipelines/ builds its session from them).
    """
    runtime = runtime or versions.runtime(None)
    check_connector_version(runtime)
    jars.java_executable()  # a clear error now rather than a Py4J one later
    settings = {**SMALL_MACHINE_CONF, CHECKPOINT_MANAGER: runtime.line.checkpoint_manager, **(conf or {})}
    extra = [j for j in settings.pop("spark.jars", "").split(",") if j]
    sets = [str(p) for pom in jar_sets for p in jars.jar_set(runtime.jars(pom))]
    settings["spark.jars"] = ",".join([str(p) for p in jars.jar_set(runtime.jars())] + sets + extra)
    settings["spark.driver.extraJavaOptions"] = driver_java_options(
        settings.get("spark.driver.extraJavaOptions", ""), runtime
    )
    if runtime.own:  # spark.jars keeps the connector too: executors of a Spark cluster fetch it from there
        settings["spark.driver.extraClassPath"] = ":".join(
            p for p in (_own_extra_classpath(), settings.get("spark.driver.extraClassPath", "")) if p
        )
    return settings


def log_level() -> str:
    return os.environ.get("HARNESS_SPARK_LOG_LEVEL", "WARN")


def spark_session(app_name: str, master: str | None = None, conf: Mapping[str, str] | None = None):
    """A SparkSession that can read and write Kafka (session_conf), in this process."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name).master(
        master or os.environ.get("HARNESS_SPARK_MASTER", DEFAULT_MASTER)
    )
    for key, value in session_conf(conf).items():
        builder = builder.config(key, value)
    launcher = launcher_env()
    os.environ.update(launcher)  # bin/spark-class reads it when getOrCreate starts the JVM; this process's alone
    try:
        spark = builder.getOrCreate()
    finally:
        for name in launcher:
            os.environ.pop(name, None)
    spark.sparkContext.setLogLevel(log_level())
    return spark
