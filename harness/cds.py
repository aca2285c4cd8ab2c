"""Class-data-sharing archives: a JVM's start-up classes parsed and verified once, mapped by every later start.

A Spark driver loads about 17,000 classes before its first batch and an
embedded broker several thousand; on two cores that is most of a restart.
Java's dynamic CDS records the classes a training run loaded
(-XX:ArchiveClassesAtExit) into an archive that later JVMs map read-only
(-XX:SharedArchiveFile): faster starts, and the pages are shared between the
drivers. `harness jars` trains the archives once per machine
(harness.cds_training, with harness.spark.warmup as the training driver).

An archive is keyed by the java binary, the JVM's own classpath and the
training's version, so a new JDK, jar set or training trains a new one; a JVM given a stale or missing archive starts
normally (-Xshare:auto), only slower.
"""

from __future__ import annotations

import hashlib
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from harness import jars

# What the training runs (harness.spark.warmup, harness.cds_training): a change there bumps it, so machines train again.
TRAINING = 2


def _key(classpath: str) -> str:
    java = Path(jars.java_executable()).resolve()
    stat = java.stat()
    fingerprint = f"{java}|{stat.st_size}|{stat.st_mtime_ns}|{classpath}|training {TRAINING}"
    return hashlib.sha256(fingerprint.encode()).hexdigest()[:16]


def archive_path(role: str, classpath: str) -> Path:
    """Where the archive for `role` (spark-driver, kafka-broker) with this classpath lives."""
    return jars.jars_dir() / "cds" / f"{role}-{_key(classpath)}.jsa"


def java_options(role: str, classpath: str) -> list[str]:
    """The flags that map the role's archive, or none while it has not been trained."""
    if os.environ.get("HARNESS_CDS", "1") == "0":
        return []
    archive = archive_path(role, classpath)
    return [f"-XX:SharedArchiveFile={archive}", "-Xshare:auto"] if archive.is_file() else []


def is_trained(role: str, classpath: str) -> bool:
    return archive_path(role, classpath).is_file()


@contextmanager
def training(role: str, classpath: str) -> Iterator[list[str]]:
    """Yield the flags for a training JVM; an archive it wrote at exit is installed atomically after the block."""
    archive = archive_path(role, classpath)
    archive.parent.mkdir(parents=True, exist_ok=True)
    staging = archive.with_name(f".{archive.name}.{os.getpid()}")
    staging.unlink(missing_ok=True)
    try:
        yield [f"-XX:ArchiveClassesAtExit={staging}"]
        if staging.is_file() and staging.stat().st_size > 0:
            for stale in archive.parent.glob(f"{role}-*.jsa"):
                stale.unlink(missing_ok=True)
            staging.rename(archive)
    finally:
        staging.unlink(missing_ok=True)
