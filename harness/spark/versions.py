"""Which Spark the streamlet drivers run on: the harness's own pyspark, or another version in an environment of its
own, built on request.

The harness's own is the pyspark installed beside it, a team's (any version of harness/spark/lines.py's lines). Teams
gate Spark upgrades, so a scenario (or a matrix column) can name `cluster.spark.version`, one of the verified
versions: another version gets a virtualenv under .cache/spark-envs/pyspark-<version>/ with that pyspark and what
the drivers import; the drivers and their Python workers run that interpreter, with the project on their path.
Either way the drivers' jars (the Kafka connector; the output kinds') are fetched for exactly their version. An
environment is complete when its marker holds the hash of what it was built from, so an interrupted build is redone,
never used.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from harness import jars
from harness.errors import HarnessError
from harness.paths import SOURCE_ROOT, cache_dir
from harness.spark import lines

CONNECTOR = "spark-kafka"  # the pom of the drivers' Kafka connector and Avro functions
# What a driver imports besides the project itself (pipelines/: pyspark, pyarrow for Arrow batches, psycopg for a
# PostgreSQL store); pandas and pyarrow are what pyspark's Arrow support needs.
DRIVER_REQUIREMENTS = ("pyarrow>=15", "pandas>=2.2,<3", "psycopg[binary]>=3.1")
_MARKER = ".complete"


@dataclass(frozen=True)
class SparkRuntime:
    version: str
    python: str  # the interpreter of the drivers and their Python workers
    own: bool  # the harness's own pyspark (its CDS archive, its standalone cluster)

    @property
    def line(self) -> lines.SparkLine:
        return lines.line(self.version)

    @property
    def scala(self) -> str:
        return self.line.scala

    @property
    def connector_artifact(self) -> str:
        return f"spark-sql-kafka-0-10_{self.scala}"

    def jars(self, pom: str = CONNECTOR) -> jars.JarSet:
        """The jar set of `pom` (the connector by default, or an output kind's) built for this Spark."""
        properties = lines.maven_properties(pom, self.version)
        return jars.JarSet(pom, self.version, tuple(sorted(properties.items())))

    def connector_version(self) -> str:
        return jars.version_in(self.jars(), self.connector_artifact)

    def pythonpath(self) -> str | None:
        """Where another environment's interpreter finds the project's packages (the harness's own has it installed)."""
        return None if self.own else str(SOURCE_ROOT)


def own_version() -> str:
    import pyspark

    return pyspark.__version__


def other_versions() -> tuple[str, ...]:
    """The verified versions the drivers can run on besides the harness's own."""
    return tuple(v for v in lines.VERIFIED if v != own_version())


def known_versions() -> tuple[str, ...]:
    return (own_version(), *other_versions())


def envs_dir() -> Path:
    return Path(os.environ.get("HARNESS_SPARK_ENVS") or cache_dir() / "spark-envs")


def _env_dir(version: str) -> Path:
    return envs_dir() / f"pyspark-{version}"


def _requirements(version: str) -> list[str]:
    return [f"pyspark=={version}", *DRIVER_REQUIREMENTS]


def _build_hash(version: str) -> str:
    return hashlib.sha256(" ".join([sys.version, *_requirements(version)]).encode()).hexdigest()


def _is_built(version: str) -> bool:
    marker = _env_dir(version) / _MARKER
    return marker.is_file() and marker.read_text().strip() == _build_hash(version)


def runtime(version: str | None) -> SparkRuntime:
    """The drivers' Spark for a scenario's `cluster.spark.version` (None: the harness's own). Another version must
    have been built (`ensure`)."""
    if version is None or version == own_version():
        return SparkRuntime(own_version(), sys.executable, own=True)
    if version not in other_versions():
        raise HarnessError(lines.unknown_version(version, known_versions()))
    if not _is_built(version):
        raise HarnessError(f"Spark {version}: its environment is not built; run `harness spark-env {version}`")
    return SparkRuntime(version, str(_env_dir(version) / "bin" / "python"), own=False)


def ensure(version: str | None, say: Callable[[str], None] = print, jar_sets: tuple[str, ...] = ()) -> SparkRuntime:
    """The runtime for `version`, building its environment and fetching its connector and `jar_sets` (the output
    kinds') first if they are missing."""
    if version is not None and version != own_version() and version in other_versions() and not _is_built(version):
        _build(version, say)
    spark = runtime(version)
    fetch_connector(spark, jar_sets)
    return spark


def fetch_connector(spark: SparkRuntime, also: tuple[str, ...] = ()) -> None:
    """Fetch the connector of `spark` (and the jar sets `also` names, built for it), or say in one line that this
    version's is not served."""
    sets = (spark.jars(), *(spark.jars(pom) for pom in also))
    try:
        jars.fetch(sets)
    except HarnessError as exc:
        raise HarnessError(
            f"Spark {spark.version}: its jars could not be fetched (verified: {', '.join(lines.VERIFIED)}): {exc}"
        ) from None


def _build(version: str, say: Callable[[str], None]) -> None:
    folder = _env_dir(version)
    say(
        f"building the environment for Spark {version} in {folder} (pip: {', '.join(_requirements(version))}), once: "
        "a few minutes"
    )
    (folder / _MARKER).unlink(missing_ok=True)
    steps = [
        [sys.executable, "-m", "venv", "--clear", str(folder)],
        [
            str(folder / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            *_requirements(version),
        ],
    ]
    for step in steps:
        result = subprocess.run(step, capture_output=True, text=True)
        if result.returncode != 0:
            last = (result.stderr.strip() or result.stdout.strip()).splitlines()[-1:] or ["no output"]
            raise HarnessError(f"building the Spark {version} environment failed ({' '.join(step[:3])}...): {last[0]}")
    (folder / _MARKER).write_text(_build_hash(version))
