"""The Java side: find java, and the Kafka broker and Spark connector jars fetched by Maven.

Jars come from the poms the harness ships (jars/ in a clone) and are copied by
`mvn dependency:copy-dependencies` into the cache, <cache>/jars/<set>/
(harness/paths.py; HARNESS_JARS_DIR overrides). A pom built per Spark version
(the connector's, an output kind's) is given that version's Maven properties
and keeps each version's jars in a folder of their own. A set is complete when
its marker file holds the hash of the pom and properties it came from, so an
interrupted download is redone, never used, and a changed pom fetches again. HARNESS_SEED_JARS may
name a read-only folder of sets fetched elsewhere (a clone's .cache/jars): a
current set there is used in place, and nothing is downloaded for it.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessError
from harness.paths import cache_dir, shipped

POM_DIR = shipped("jars")
BROKER = "kafka"  # the brokers' and their tools' jars; the drivers' sets are of their Spark (harness.spark.versions)


@dataclass(frozen=True)
class JarSet:
    """The jars of one shipped pom (jars/<pom>/pom.xml), fetched with `properties` as Maven's -D settings; `label`
    tells one such fetch from another in the cache (a Spark version)."""

    pom: str
    label: str = ""
    properties: tuple[tuple[str, str], ...] = ()

    @property
    def name(self) -> str:
        return f"{self.pom}-{self.label}" if self.label else self.pom


def _as_set(spec: str | JarSet) -> JarSet:
    return spec if isinstance(spec, JarSet) else JarSet(spec)


def shipped_sets() -> list[str]:
    """Every pom the harness ships (jars/<pom>/pom.xml): the brokers', and those of the drivers' Spark (the
    connector, and what streamlet and output kinds need: spark_jars, jar_sets)."""
    return sorted(p.parent.name for p in POM_DIR.glob("*/pom.xml"))


_MARKER = ".complete"


def jars_dir() -> Path:
    return Path(os.environ.get("HARNESS_JARS_DIR") or cache_dir() / "jars")


def maven_repository() -> Path:
    """The one Maven repository every artifact the harness fetches lands in (its jar sets, the packages a job asks
    Spark for: harness/spark/packages.py), and Spark's Ivy reads: Maven's own (HARNESS_MAVEN_REPO overrides)."""
    return Path(os.environ.get("HARNESS_MAVEN_REPO") or Path.home() / ".m2" / "repository")


MIN_JAVA = 17


def java_executable() -> str:
    """Path of java (JAVA_HOME first, then PATH), checked once: Linux (the harness tracks its processes in /proc)
    and Java 17+; a clear error, one line, if not."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").is_file():
        return _checked(str(Path(java_home) / "bin" / "java"))
    found = shutil.which("java")
    if not found:
        raise HarnessError(f"java not found: install Java {MIN_JAVA}+ and put it on PATH (or set JAVA_HOME)")
    return _checked(found)


@functools.lru_cache(maxsize=None)
def _checked(java: str) -> str:
    if sys.platform != "linux":
        raise HarnessError(
            f"the harness runs on Linux (it tracks every process it starts in /proc), not {sys.platform}"
        )
    result = subprocess.run([java, "-version"], capture_output=True, text=True)
    match = re.search(r'version "(\d+)', result.stderr)
    if not match or int(match.group(1)) < MIN_JAVA:
        found = match.group(0) if match else (result.stderr.strip().splitlines() or ["no version"])[0]
        raise HarnessError(f"{java}: Java {MIN_JAVA}+ is needed, found {found} (set JAVA_HOME to another)")
    return java


def set_dir(spec: str | JarSet) -> Path:
    """Where a set is: the cache's, or the seed's when only that one is current (used in place, read-only)."""
    spec = _as_set(spec)
    own = jars_dir() / spec.name
    seed = Path(os.environ["HARNESS_SEED_JARS"]) / spec.name if os.environ.get("HARNESS_SEED_JARS") else None
    if seed is not None and not _current_in(own, spec) and _current_in(seed, spec):
        return seed
    return own


def _pom_hash(spec: JarSet) -> str:
    pom = (POM_DIR / spec.pom / "pom.xml").read_bytes()
    return hashlib.sha256(pom + repr(spec.properties).encode() if spec.properties else pom).hexdigest()


def _current_in(folder: Path, spec: JarSet) -> bool:
    marker = folder / _MARKER
    return marker.exists() and marker.read_text().strip() == _pom_hash(spec)


def _is_current(spec: JarSet) -> bool:
    return _current_in(set_dir(spec), spec)


def jar_set(spec: str | JarSet) -> list[Path]:
    """The jars of one set, or a clear error saying how to fetch them."""
    folder = set_dir(spec)
    if not (folder / _MARKER).exists():
        name = _as_set(spec).name
        raise HarnessError(f"{name} jars missing in {folder}: run `harness jars` (needs Maven) to fetch them")
    return sorted(folder.glob("*.jar"))


def kafka_classpath(spec: str | JarSet = BROKER) -> str:
    """The class path of a Kafka version's brokers and tools (harness.cluster.releases.jar_set), the default's."""
    return os.pathsep.join(str(p) for p in jar_set(spec))


def _version_in(jars: list[Path], artifact: str) -> str:
    for jar in jars:
        match = re.fullmatch(re.escape(artifact) + r"-(\d[\w.\-]*)\.jar", jar.name)
        if match:
            return match.group(1)
    raise HarnessError(f"{artifact} jar not found among {len(jars)} jars in {jars[0].parent if jars else jars_dir()}")


def kafka_version() -> str:
    return _version_in(jar_set(BROKER), "kafka_2.13")


def version_in(spec: str | JarSet, artifact: str) -> str:
    """The version of `artifact`'s jar in a fetched set."""
    return _version_in(jar_set(spec), artifact)


def _maven_error(result: subprocess.CompletedProcess) -> str:
    """Maven's first error, without its colours; an artifact Maven could not find named as such."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", result.stdout)
    missing = re.search(r"Could not find artifact (\S+)|(\S+) was not found in", text)
    if missing:
        return f"{missing.group(1) or missing.group(2)} is not served by the Maven repositories this machine reaches"
    errors = [line for line in text.splitlines() if "[ERROR]" in line]
    return errors[0].replace("[ERROR]", "").strip() if errors else result.stderr.strip()[:300]


def fetch(specs: tuple[str | JarSet, ...] = (BROKER,), quiet: bool = True) -> None:
    """Copy each missing jar set from Maven into the cache (idempotent)."""
    for spec in map(_as_set, specs):
        if _is_current(spec):
            continue
        name = spec.name
        target = jars_dir() / name
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
            str(POM_DIR / spec.pom / "pom.xml"),
            "dependency:copy-dependencies",
            f"-DoutputDirectory={staging}",
            f"-Dmaven.repo.local={maven_repository()}",
            *(f"-D{key}={value}" for key, value in spec.properties),
        ]
        if quiet:
            cmd.insert(1, "-q")
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            raise HarnessError(f"fetching {name} jars with Maven failed: {_maven_error(result)}")
        (staging / _MARKER).write_text(_pom_hash(spec))
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
