"""A job's own Python requirements (its requirements.txt, or a list in the scenario), installed into a folder of
their own beside the drivers' pyspark, never into the harness's environment: pip's --target, the drivers' pyspark
kept (constrained to its version, and any copy pip made removed, so the job imports the one the connector
matches). Cached by the requirements' hash and the drivers' Python and Spark: a second run installs nothing and
needs no network. The job finds them on its PYTHONPATH."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessError
from harness.paths import cache_dir

MARKER = ".complete"
KEPT = ("pyspark", "py4j")  # the drivers' own: a copy in the folder would shadow them


@dataclass(frozen=True)
class Installed:
    folder: Path
    packages: tuple[str, ...]  # name==version, as installed
    took_s: float
    cached: bool  # found installed: nothing was fetched


def _folder(lines: tuple[str, ...], python: str, spark: str) -> Path:
    key = hashlib.sha256("\n".join([python, spark, *lines]).encode()).hexdigest()[:16]
    return cache_dir() / "requirements" / key


def _installed(folder: Path) -> tuple[str, ...]:
    found = []
    for info in sorted(folder.glob("*.dist-info")):
        name, _, version = info.name.removesuffix(".dist-info").rpartition("-")
        found.append(f"{name}=={version}")
    return tuple(found)


def install(lines: tuple[str, ...], python: str, spark: str, where: str) -> Installed:
    """The requirements installed (or found installed) for the drivers' `python` and pyspark `spark`; a
    requirement pip cannot install is one line naming `where` and pip's reason."""
    t0 = time.monotonic()
    folder = _folder(lines, python, spark)
    if (folder / MARKER).is_file():
        return Installed(folder, _installed(folder), round(time.monotonic() - t0, 3), True)
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        (staging / "requirements.txt").write_text("\n".join(lines) + "\n")
        (staging / "constraints.txt").write_text(f"pyspark=={spark}\n")
        cmd = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--target", str(staging)]
        cmd += ["-r", str(staging / "requirements.txt"), "-c", str(staging / "constraints.txt")]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            errors = [line for line in done.stderr.splitlines() if line.startswith("ERROR")] or [done.stderr.strip()]
            raise HarnessError(f"{where}: pip cannot install them ({errors[0][:300].removeprefix('ERROR: ')})")
        for kept in KEPT:
            for copy in [*staging.glob(kept), *staging.glob(f"{kept}-*.dist-info")]:
                shutil.rmtree(copy)
        (staging / MARKER).write_text("\n".join(lines) + "\n")
        if folder.exists():
            shutil.rmtree(folder)
        staging.rename(folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return Installed(folder, _installed(folder), round(time.monotonic() - t0, 3), False)
