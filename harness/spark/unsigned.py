"""Unsigned copies of the two signed jars Spark's code generation loads, first on the drivers' classpath.

Janino and commons-compiler ship signed (META-INF/*.SF, *.DSA). Java's class-data sharing skips every class of a
signed jar, so the 360 classes that compile a driver's generated code came from the jar and had their digests
checked on every start, in the middle of a restarted driver's first batch. The copies hold the same classes without
the signature: the drivers' classpath (spark.driver.extraClassPath) lists them before pyspark's jars, so the JVM loads
them from the archive.
"""

from __future__ import annotations

import os
import re
import zipfile
from pathlib import Path

from harness import jars

SIGNED = ("janino", "commons-compiler")  # pyspark's jars whose classes the drivers load on every start
_SIGNATURE = re.compile(r"META-INF/[^/]+\.(SF|DSA|RSA|EC)$")


def _folder() -> Path:
    return jars.jars_dir() / "unsigned"


def _originals(pyspark_jars: Path) -> list[Path]:
    return sorted(p for name in SIGNED for p in pyspark_jars.glob(f"{name}-[0-9]*.jar"))


def copies(pyspark_jars: Path) -> list[Path]:
    """The unsigned copies of `pyspark_jars`' signed compiler jars, made once (atomically) when missing."""
    made = []
    for original in _originals(pyspark_jars):
        copy = _folder() / original.name
        if not copy.is_file():
            copy.parent.mkdir(parents=True, exist_ok=True)
            partial = copy.with_name(f".{copy.name}.{os.getpid()}")
            with zipfile.ZipFile(original) as source, zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as target:
                for entry in source.infolist():
                    if not _SIGNATURE.match(entry.filename):
                        target.writestr(entry, source.read(entry.filename))
            partial.rename(copy)
        made.append(copy)
    return made


def classpath(pyspark_jars: Path) -> str:
    """spark.driver.extraClassPath for the harness's own Spark: the unsigned copies."""
    return ":".join(str(p) for p in copies(pyspark_jars))
