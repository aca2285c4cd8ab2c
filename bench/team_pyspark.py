"""The harness beside a team's own pyspark, timed: for each version, a virtualenv with that pyspark installed
first, then the harness's wheel (built from a clone by the release workflow's steps, as bench/new_team.py does)
with a plain `pip install`; the pyspark must stay as it was and `pip check` be clean. Then `harness jars` fetches
that version's connector into a cache of the virtualenv's own, and `harness run smoke` must pass on it.

    python bench/team_pyspark.py [--folder DIR] [VERSION ...]     (default: 4.2.0 3.5.7)

Prints each step with its seconds and what it found; exits with the first failing step's code. Maven's and pip's
own caches are used as usual; HARNESS_SEED_JARS is left unset, so the connector is fetched for each version.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from pathlib import Path

from new_team import StepFailed, release, run_step  # bench/ is the script's folder


def one_version(version: str, wheel: Path, folder: Path, env: dict[str, str]) -> None:
    """pyspark `version` first, then the harness: kept, checked, fetched for, and run."""
    venv = folder / f"pyspark-{version}"
    run_step(f"{version}: virtualenv", f"{sys.executable} -m venv {venv}", folder, env)
    pip = f"{venv / 'bin' / 'python'} -m pip --disable-pip-version-check"
    run_step(f"{version}: pip install pyspark=={version}", f"{pip} install -q pyspark=={version}", folder, env)
    run_step(f"{version}: pip install the harness", f"{pip} install -q {wheel}", folder, env)
    found = run_step(f"{version}: pyspark kept", f"{pip} list 2>/dev/null | grep -E '^pyspark '", folder, env)
    kept = found.split()[-1]
    print(f"    pyspark {kept} ({'kept' if kept == version else f'REPLACED, was {version}'})", flush=True)
    run_step(f"{version}: pip check", f"{pip} check", folder, env)
    own = {**env, "HARNESS_CACHE": str(venv / "harness-cache")}
    harness = venv / "bin" / "harness"
    fetched = run_step(f"{version}: harness jars", f"{harness} jars", folder, own)
    connector = sorted((venv / "harness-cache" / "jars").glob("spark-kafka-*/spark-sql-kafka-0-10_*.jar"))
    print(f"    connector: {', '.join(p.name for p in connector) or 'none'}", flush=True)
    verdict = run_step(f"{version}: harness run smoke", f"{harness} run smoke --out {venv / 'smoke'}", folder, own)
    line = re.search(r"^(PASS|FAIL|UNKNOWN) .*$", verdict, re.M)
    print(f"    {line.group(0) if line else 'no verdict line'}", flush=True)
    if kept != version or "pyspark " + version not in fetched:
        raise StepFailed(1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("versions", nargs="*", default=["4.2.0", "3.5.7"])
    parser.add_argument("--folder", type=Path, help="where to work (default: a temporary folder, removed after)")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "HARNESS_SEED_JARS", "HARNESS_CACHE")}
    with tempfile.TemporaryDirectory(prefix="team-pyspark-") as scratch:
        folder = args.folder or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        try:
            wheel = release(folder, env)
            for version in args.versions:
                one_version(version, wheel, folder, env)
        except StepFailed as failed:
            return failed.code
    return 0


if __name__ == "__main__":
    sys.exit(main())
