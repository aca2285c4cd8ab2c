"""The packages a job names in `spark.jars.packages` (its builder's config, or the scenario's `packages`), served
offline: Spark's own resolution (Ivy, at the JVM's start) pointed at a local Maven repository the harness fills.

- Spark's Kafka connector and Avro functions, at any version and for any Scala line, are the ones the harness
  already puts on the job's class path (matching the drivers' pyspark): a repository of aliases
  (<cache>/packages/aliases) holds one at the coordinates the job names, an empty jar with no dependencies.
- Any other package is fetched once with Maven (its dependencies too) into the Maven repository the harness's jar
  sets are fetched into (harness/jars.py maven_repository), and read from there ever after, without the internet.
  One built for another Scala line than the drivers' Spark is refused, naming the one that fits.

Spark's Ivy reads the aliases first, then that repository, and nothing else.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import zipfile
from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessError
from harness.jars import maven_repository
from harness.paths import cache_dir

COORDINATES = re.compile(r"^([\w.-]+):([\w.-]+):([\w.+-]+)$")
SCALA = re.compile(r"_(2\.1[0-3]|3)$")  # an artifact built for a Scala line: name_2.13
SERVED = ("spark-sql-kafka-0-10", "spark-token-provider-kafka-0-10", "spark-avro")  # group org.apache.spark
SETTINGS = """<ivysettings>
  <settings defaultResolver="harness"/>
  <resolvers>
    <chain name="harness" returnFirst="true">
      <ibiblio name="aliases" m2compatible="true" usepoms="true" root="{aliases}"/>
      <ibiblio name="maven" m2compatible="true" usepoms="true" root="{maven}"/>
    </chain>
  </resolvers>
</ivysettings>
"""


@dataclass(frozen=True)
class Package:
    group: str
    artifact: str
    version: str

    def __str__(self) -> str:
        return f"{self.group}:{self.artifact}:{self.version}"

    @property
    def served(self) -> bool:
        """Whether the harness's own jars are it: Spark's Kafka connector or Avro functions, any version."""
        return self.group == "org.apache.spark" and SCALA.sub("", self.artifact) in SERVED

    def folder(self, repository: Path) -> Path:
        return repository.joinpath(*self.group.split("."), self.artifact, self.version)


def parse(text: str, where: str) -> list[Package]:
    """Packages as `spark.jars.packages` lists them (comma-separated group:artifact:version)."""
    found = []
    for item in filter(None, (p.strip() for p in text.split(","))):
        match = COORDINATES.match(item)
        if match is None:
            raise HarnessError(f"{where}: {item!r} is not a package (expected group:artifact:version)")
        found.append(Package(*match.groups()))
    return found


def refusal(package: Package, scala: str, spark: str) -> str | None:
    """Why `package` cannot run on the drivers' Spark (`spark`, Scala `scala`): built for another Scala line."""
    line = SCALA.search(package.artifact)
    if package.served or line is None or line.group(1) == scala:
        return None
    fits = SCALA.sub(f"_{scala}", package.artifact)
    return (
        f"{package} is built for Scala {line.group(1)}; the drivers' Spark {spark} runs Scala {scala}: name "
        f"{package.group}:{fits} at a release built for Spark {'.'.join(spark.split('.')[:2])}"
    )


def aliases() -> Path:
    return cache_dir() / "packages" / "aliases"


def ivy_settings() -> Path:
    """The Ivy settings `serve` writes: Spark's resolution pointed at the aliases, then the Maven repository."""
    return aliases().parent / "ivysettings.xml"


def _alias(package: Package, root: Path) -> None:
    """The package, as a pom of no dependencies and an empty jar: its classes are the harness's already."""
    folder = package.folder(root)
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"{package.artifact}-{package.version}"
    (folder / f"{stem}.pom").write_text(
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        f"<groupId>{package.group}</groupId><artifactId>{package.artifact}</artifactId>"
        f"<version>{package.version}</version></project>\n"
    )
    with zipfile.ZipFile(folder / f"{stem}.jar", "w") as jar:
        jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nCreated-By: spark-kafka-harness (an alias)\n")


def _fetch(package: Package, root: Path) -> None:
    """The package and its dependencies into the repository with Maven, unless it is there already."""
    if (package.folder(root) / f"{package.artifact}-{package.version}.jar").is_file():
        return
    mvn = shutil.which("mvn")
    if not mvn:
        raise HarnessError(f"package {package}: not in the harness's cache, and no mvn to fetch it with")
    cmd = [mvn, "-B", "-q", "dependency:get", f"-Dartifact={package}", f"-Dmaven.repo.local={root}"]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        errors = [line.replace("[ERROR]", "").strip() for line in result.stdout.splitlines() if "[ERROR]" in line]
        why = errors[0] if errors else (result.stderr.strip().splitlines() or ["Maven failed"])[0]
        raise HarnessError(f"package {package}: not in the harness's cache and Maven cannot fetch it ({why[:200]})")


def prefetch(applications: dict[str, dict], python: str, spark: str) -> list[str]:
    """Fetch what each application (name -> its settings) asks for ahead of a run, as its start would: its
    packages and its requirements; a line each for `harness jars`."""
    from harness.spark.requirements import install

    lines = []
    for name, settings in applications.items():
        named = [p for text in settings.get("packages") or () for p in parse(text, f"applications.{name}.packages")]
        if named:
            serve(named)
            lines.append(f"{name}: its packages {', '.join(map(str, named))} served offline")
        if settings.get("requirements"):
            done = install(tuple(settings["requirements"]), python, spark, f"applications.{name}.requirements")
            lines.append(f"{name}: its requirements {', '.join(done.packages)} in {done.folder}")
    return lines


def serve(packages: list[Package]) -> Path:
    """The Ivy settings that resolve `packages` offline, every one of them there: an alias of the harness's own
    jars, or fetched into the Maven repository."""
    own, maven = aliases(), maven_repository()
    for package in packages:
        if package.served:
            _alias(package, own)
        else:
            _fetch(package, maven)
    own.mkdir(parents=True, exist_ok=True)
    ivy_settings().write_text(SETTINGS.format(aliases=own.as_uri(), maven=maven.as_uri()))
    return ivy_settings()
