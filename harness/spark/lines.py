"""The Spark versions the harness knows: each release line's Scala and what its classes are called; the versions
verified with a real run each.

A driver's Kafka connector (spark-sql-kafka-0-10, its token provider, spark-avro) is of exactly its pyspark's
version, fetched from the shipped poms (jars/spark-kafka, and the jar sets of the output kinds), which take what is
here as Maven properties (`maven_properties`), with the release of a jar set its output kind declares for the line
(harness/outputs/kind.py jar_sets). Nothing else in the harness names a Spark version.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.errors import HarnessError


@dataclass(frozen=True)
class SparkLine:
    """A Spark release line (major.minor): what its drivers need that differs from one line to the next."""

    scala: str  # the Scala binary version its jars are built for
    checkpoint_manager: str  # the checkpoint file manager writing through Hadoop's FileSystem (spark/session.py)


_STREAMING = "org.apache.spark.sql.execution.streaming"
LINES = {
    "3.5": SparkLine("2.12", f"{_STREAMING}.FileSystemBasedCheckpointFileManager"),
    "4.0": SparkLine("2.13", f"{_STREAMING}.FileSystemBasedCheckpointFileManager"),
    # Spark 4.1 moved the checkpoint classes into a package of their own.
    "4.1": SparkLine("2.13", f"{_STREAMING}.checkpointing.FileSystemBasedCheckpointFileManager"),
    "4.2": SparkLine("2.13", f"{_STREAMING}.checkpointing.FileSystemBasedCheckpointFileManager"),
}
# The versions a real run verified on this harness (docs/spark-versions-report.md): a scenario's cluster.spark.version
# is one of these or the harness's own, and pyproject.toml's pyspark range ends at the newest. The Makefile's default
# (SPARK) is 4.2.0: 4.1.1, the newest whose line every output kind's jars are built for, is the newest 4.1 whose
# connector resolves (4.1.2's does not: PUBLISHED_UNSERVED), and its Kafka source fails the first batch of a query
# restarted with a batch planned (SPARK-55271, fixed in 4.2.0).
VERIFIED = ("3.5.7", "4.0.0", "4.1.1", "4.2.0")
# Published (pyspark on PyPI) but not runnable here, each with what Maven lacked when tried (2026-12-04): 4.1.2's
# connector pom resolves, its jars' dependencies do not; 4.3.0 has no connector at all.
PUBLISHED_UNSERVED = {
    "4.1.2": "its connector's spark-token-provider-kafka-0-10_2.13 4.1.2 and spark-avro_2.13 4.1.2 are not served",
    "4.3.0": "its connector spark-sql-kafka-0-10_2.13 4.3.0 is not served",
}
# Real-time Mode (Trigger.RealTime, docs/real-time-mode.md): Spark 4.1's engine runs stateless queries, but a
# PySpark job sets it with DataStreamWriter.trigger(realTime=...), which pyspark has from 4.2 (4.1.1's has no such
# argument); a query that deduplicates or aggregates runs from 4.3 (Spark's guide).
REAL_TIME_SINCE = {"stateless": "4.2", "stateful": "4.3"}


def unknown_version(version: str, known: tuple[str, ...]) -> str:
    """Why the drivers cannot run Spark `version`: published but its connector not served, or not known at all."""
    if version in PUBLISHED_UNSERVED:
        return f"Spark {version} is published, {PUBLISHED_UNSERVED[version]} (runnable: {', '.join(known)})"
    return f"Spark {version}: not one the drivers can run on (known: {', '.join(known)})"


def line_of(version: str) -> str:
    return ".".join(version.split(".")[:2])


def line(version: str) -> SparkLine:
    """The release line of Spark `version`, or one line saying which the harness knows."""
    found = LINES.get(line_of(version))
    if found is None:
        raise HarnessError(f"Spark {version}: not a release line the harness knows ({', '.join(LINES)})")
    return found


def _numbers(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in line_of(version).split("."))


def real_time_unsupported(version: str, stateful: bool) -> str | None:
    """Why drivers on Spark `version` cannot run a Real-time Mode query (that deduplicates, when `stateful`), and
    which served version could, or None."""
    needs = REAL_TIME_SINCE["stateful" if stateful else "stateless"]
    if _numbers(version) >= _numbers(needs):
        return None
    what = "Real-time Mode with a deduplication or an aggregation" if stateful else "Real-time Mode"
    served = [v for v in VERIFIED if _numbers(v) >= _numbers(needs)]
    if served:
        hint = f"set cluster.spark.version: {served[-1]}"
        return f"{what} needs Spark {needs} or later; the drivers run {version} ({hint})"
    return f"{what} needs Spark {needs} or later, which is not served (the newest here: {VERIFIED[-1]})"


def _releases(version: str) -> dict[str, str | None]:
    """The jar sets released per Spark line (the output kinds'), and the release built for `version`'s line."""
    from harness.outputs import builtin_output_kinds  # the kinds, only when a jar set is asked for

    line(version)  # a line the harness does not know: one line saying which it knows
    sets = {name: per_line for kind in builtin_output_kinds().values() for name, per_line in kind.jar_sets.items()}
    return {name: per_line.get(line_of(version)) for name, per_line in sets.items()}


def unserved(jar_set: str, version: str) -> str | None:
    """Why `jar_set` cannot be fetched for Spark `version` (no release of it built for that line), or None."""
    releases = _releases(version)
    if jar_set in releases and releases[jar_set] is None:
        return f"no {jar_set} release built for Spark {line_of(version)} is served"
    return None


def maven_properties(jar_set: str, version: str) -> dict[str, str]:
    """What the pom of `jar_set` (spark-kafka, or an output kind's) is given for Spark `version`'s drivers, or one line
    saying that none of its releases is built for that Spark."""
    why = unserved(jar_set, version)
    if why:
        raise HarnessError(why)
    found = line(version)
    properties = {"spark.version": version, "spark.line": line_of(version), "scala.binary": found.scala}
    release = _releases(version).get(jar_set)
    if release is not None:
        properties[f"{jar_set}.version"] = release
    return properties
