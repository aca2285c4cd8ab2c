"""The Java side: find java, and the Kafka broker and Spark connector jars fetched by Maven.

Jars come from the poms in jars/ (committed) and are copied by
`mvn dependency:copy-dependencies` into a git-ignored cache folder,
.cache/jars/<set>/ by default (HARNESS_JARS_DIR overrides). A set is complete
when its marker file holds the hash of the pom it came from, so an interrupted
download is redone, never used, and a changed pom fetches again.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from harness.errors import HarnessError

PROJECT_ROOT = Path(__file__).resolve().parent.parent
POM_DIR = PROJECT_ROOT / "jars"
JAR_SETS = ("kafka", "spark-kafka", "delta")
_MARKER = ".complete"


def jars_dir() -> Path:
    return Path(os.environ.get("HARNESS_JARS_DIR", PROJECT_ROOT / ".cache" / "jars"))


def java_executable() -> str:
    """Path of java (JAVA_HOME first, then PATH); a clear error if there is none."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").is_file():
        return str(Path(java_home) / "bin" / "java")
    found = shutil.which("java")
    if not found:
        raise HarnessError("java not found: install Java 17+ and put it on PATH (or set JAVA_HOME)")
    return found


def _set_dir(name: str) -> Path:
    return jars_dir() / name


def _pom_hash(name: str) -> str:
    return hashlib.sha256((POM_DIR / name / "pom.xml").read_bytes()).hexdigest()


def _is_current(name: str) -> bool:
    marker = _set_dir(name) / _MARKER
    return marker.exists() and marker.read_text().strip() == _pom_hash(name)


def jar_set(name: str) -> list[Path]:
    """The jars of one set, or a clear error saying how to fetch them."""
    folder = _set_dir(name)
    if not (folder / _MARKER).exists():
        raise HarnessError(f"{name} jars missing in {folder}: run `make jars` (needs Maven) to fetch them")
    return sorted(folder.glob("*.jar"))


def kafka_classpath() -> str:
    return os.pathsep.join(str(p) for p in jar_set("kafka"))


def connector_jars(name: str = "spark-kafka") -> list[Path]:
    """The Kafka connector's jar set: the harness's own Spark's, or another version's (harness.spark.versions)."""
    return jar_set(name)


def _version_in(jars: list[Path], artifact: str) -> str:
    for jar in jars:
        match = re.fullmatch(re.escape(artifact) + r"-(\d[\w.\-]*)\.jar", jar.name)
        if match:
            return match.group(1)
    raise HarnessError(f"{artifact} jar not found among {len(jars)} jars in {jars[0].parent if jars else jars_dir()}")


def kafka_version() -> str:
    return _version_in(jar_set("kafka"), "kafka_2.13")


def connector_version(name: str = "spark-kafka", artifact: str = "spark-sql-kafka-0-10_2.13") -> str:
    return _version_in(connector_jars(name), artifact)


def delta_version() -> str:
    return _version_in(jar_set("delta"), "delta-spark_2.13")


def fetch(names: tuple[str, ...] = JAR_SETS, quiet: bool = True) -> None:
    """Copy each missing jar set from Maven into the cache (idempotent)."""
    for name in names:
        target = _set_dir(name)
        if _is_current(name):
            continue
        mvn = shutil.which("mvn")
        if not mvn:
            raise HarnessError("mvn not found: install Maven to fetch the Kafka and Spark connector jars")
        java_executable()
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=target.parent))
        cmd = [
            mvn,
            "-B",
            "-f",
            str(POM_DIR / name / "pom.xml"),
            "dependency:copy-dependencies",
            f"-DoutputDirectory={staging}",
        ]
        if quiet:
            cmd.insert(1, "-q")
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            errors = [line for line in result.stdout.splitlines() if "[ERROR]" in line]
            first = errors[0].replace("[ERROR]", "").strip() if errors else result.stderr.strip()[:300]
            raise HarnessError(f"fetching {name} jars with Maven failed: {first}")
        (staging / _MARKER).write_text(_pom_hash(name))
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
