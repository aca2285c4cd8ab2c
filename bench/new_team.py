"""What a new team does, from an empty folder, timed: a virtualenv with the harness installed from a wheel,
`harness init`, then the steps of the CI recipe it wrote (.github/workflows/harness.yml: install, jars, validate,
gate), and the GitLab recipe's steps but its system packages and its gate (the same command as the other's).

    python bench/new_team.py WHEEL [--folder DIR]

Prints each step with its seconds and the total; exits with the first failing step's code (0: the gate passed).
HARNESS_SEED_JARS (a clone's .cache/jars) spares the Maven download; pip's own cache is used as usual.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml


def steps(folder: Path, wheel: Path) -> list[tuple[str, str, Path]]:
    """(name, shell command, where) in the order a new team meets them."""
    project = folder / "project"
    found = [
        ("virtualenv", f"{sys.executable} -m venv venv", folder),
        ("install the wheel", f"venv/bin/pip install -q {wheel}", folder),
        ("harness init", "venv/bin/harness init project", folder),
    ]
    workflow = yaml.safe_load((Path(__file__).parent.parent / "harness/templates/github-actions.yml").read_text())
    for step in workflow["jobs"]["gate"]["steps"]:
        if "run" in step:
            found.append((f"github: {step['name']}", step["run"], project))
    gitlab = yaml.safe_load((Path(__file__).parent.parent / "harness/templates/gitlab-ci.yml").read_text())
    gate = next(command for _, command, _ in found if " gate " in command)
    for line in gitlab["harness-gate"]["script"]:
        if line.startswith("apt-get"):
            continue  # the system's packages: Java and Maven, here already
        if " gate " in line:
            assert line == gate.strip(), (line, gate)  # the same gate: run once
            continue
        found.append((f"gitlab: {line.split(' ', 1)[0]}", line, project))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheel", type=Path)
    parser.add_argument("--folder", type=Path, default=None, help="an empty folder [a new temporary one]")
    args = parser.parse_args()
    folder = args.folder or Path(tempfile.mkdtemp(prefix="new-team-"))
    folder.mkdir(parents=True, exist_ok=True)
    # As on a CI runner: `python` is the one a setup step put first on PATH (here the virtualenv's, made first).
    env = {
        **os.environ,
        "HARNESS_PACKAGE": str(args.wheel.resolve()),
        "HARNESS_CACHE": str(folder / "cache"),
        "PATH": f"{folder / 'venv' / 'bin'}{os.pathsep}{os.environ['PATH']}",
    }
    env.pop("VIRTUAL_ENV", None)
    t0 = time.monotonic()
    for name, command, where in steps(folder, args.wheel.resolve()):
        started = time.monotonic()
        result = subprocess.run(["bash", "-ec", command], cwd=where, env=env)
        print(f"{time.monotonic() - started:7.1f}s  {name}", flush=True)
        if result.returncode != 0:
            print(f"step failed ({result.returncode}): {command}", flush=True)
            return result.returncode
    print(f"{time.monotonic() - t0:7.1f}s  total, from an empty folder ({folder})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
