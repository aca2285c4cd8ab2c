"""What a new team does, from an empty folder, timed: the harness's release built from a clone by the release
workflow's own steps (.github/workflows/release.yml: build, twine check, listings), a virtualenv with that wheel,
`harness init`, then the CI recipes it wrote, step by step: the GitHub workflow's `run:` lines, then the GitLab
job's `script:` lines (but its system packages, here already, and its gate, the same command as the other's), with
the recipes' own env and the harness's source set to the wheel's file URL and sha256. Before them, the install step
with no source set must fail, saying what to set. After the gate, the files the GitHub recipe uploads are listed
by kind: the reports and every run's logs.

    python bench/new_team.py [--folder DIR]

Prints each step with its seconds and the total; exits with the first failing step's code (0: the gate passed).
HARNESS_SEED_JARS (a clone's .cache/jars) spares the Maven download; pip's own cache is used as usual.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = ROOT / "harness" / "templates"
GITHUB = yaml.safe_load((TEMPLATES / "github-actions.yml").read_text())  # the recipe harness init writes
UNSET_SOURCE = "set HARNESS_WHEEL_URL and HARNESS_WHEEL_SHA256, or HARNESS_INDEX_URL and HARNESS_VERSION"


class StepFailed(Exception):
    def __init__(self, code: int):
        self.code = code


def run_step(name: str, command: str, where: Path, env: dict[str, str]) -> str:
    """Runs one shell step as a CI runner would (bash -e), printing its time; returns its output."""
    started = time.monotonic()
    result = subprocess.run(["bash", "-ec", command], cwd=where, env=env, capture_output=True, text=True)
    sys.stdout.write(result.stdout[-2000:])
    sys.stderr.write(result.stderr[-2000:])
    print(f"{time.monotonic() - started:7.1f}s  {name}", flush=True)
    if result.returncode != 0:
        print(f"step failed ({result.returncode}): {command}", flush=True)
        raise StepFailed(result.returncode)
    return result.stdout + result.stderr


def release(folder: Path, env: dict[str, str]) -> Path:
    """The wheel, built in a clone by the release workflow's build job (its `run:` steps, the tag check skipped)."""
    run_step("git clone", f"git clone -q {ROOT} {folder / 'src'}", folder, env)
    run_step("python for the release", f"{sys.executable} -m venv {folder / 'release-python'}", folder, env)
    release_env = {**env, "PATH": f"{folder / 'release-python' / 'bin'}{os.pathsep}{env['PATH']}"}
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "release.yml").read_text())
    for step in workflow["jobs"]["build"]["steps"]:
        if "run" in step and "if" not in step:
            run_step(f"release: {step['name']}", step["run"], folder / "src", release_env)
    [wheel] = (folder / "src" / "dist").glob("*.whl")
    return wheel


def recipe_env(project: Path, wheel: Path | None, env: dict[str, str]) -> dict[str, str]:
    """The GitHub recipe's env as the team would fill it in: the source is the wheel's URL and sha256."""
    filled = {
        name: str(value).replace("${{ github.workspace }}", str(project))
        for name, value in GITHUB["jobs"]["gate"]["env"].items()
    }
    if wheel is not None:
        filled["HARNESS_WHEEL_URL"] = wheel.as_uri()
        filled["HARNESS_WHEEL_SHA256"] = hashlib.sha256(wheel.read_bytes()).hexdigest()
    return {**env, **filled}


def recipe_steps() -> list[tuple[str, str]]:
    """(name, shell command): the GitHub recipe's `run:` steps, then the GitLab recipe's other `script:` lines."""
    found = [(f"github: {step['name']}", step["run"]) for step in GITHUB["jobs"]["gate"]["steps"] if "run" in step]
    gate = next(command for _, command in found if " gate " in command)
    gitlab = yaml.safe_load((TEMPLATES / "gitlab-ci.yml").read_text())
    for line in gitlab["harness-gate"]["script"]:
        if line.startswith("apt-get"):
            continue  # the system's packages: Java, Maven and curl, here already
        if " gate " in line:
            assert line == gate.strip(), (line, gate)  # the same gate: run once
            continue
        found.append((f"gitlab: {line}", line))
    return found


def uploaded(project: Path) -> dict[str, int]:
    """How many files the GitHub recipe's upload step takes, by kind (logs, reports, junit)."""
    [upload] = [s for s in GITHUB["jobs"]["gate"]["steps"] if s.get("uses", "").startswith("actions/upload")]
    files = {p for pattern in upload["with"]["path"].split() for p in project.glob(pattern)}
    files = {f for p in files for f in ([p] if p.is_file() else p.rglob("*")) if f.is_file()}
    kinds = {"logs": "/logs/", "reports": "report.", "junit": "junit.xml"}
    return {kind: sum(mark in str(f) for f in files) for kind, mark in kinds.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", type=Path, default=None, help="an empty folder [a new temporary one]")
    args = parser.parse_args()
    folder = (args.folder or Path(tempfile.mkdtemp(prefix="new-team-"))).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    # As on a CI runner: `python` is the one a setup step put first on PATH (here the virtualenv's, made first).
    env = {**os.environ, "PATH": f"{folder / 'venv' / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    env.pop("VIRTUAL_ENV", None)
    project = folder / "project"
    t0 = time.monotonic()
    try:
        wheel = release(folder, env)
        run_step("virtualenv", f"{sys.executable} -m venv venv", folder, env)
        run_step("install the wheel", f"venv/bin/pip install -q {wheel}", folder, env)
        run_step("harness init", "venv/bin/harness init project", folder, env)
        steps = recipe_steps()
        refused = subprocess.run(
            ["bash", "-ec", steps[0][1]],
            cwd=project,
            env=recipe_env(project, None, env),
            capture_output=True,
            text=True,
        )
        print(f"  refused: {refused.stderr.strip()}", flush=True)
        if refused.returncode == 0 or UNSET_SOURCE not in refused.stderr:
            print("the install step, with no source set, did not fail saying what to set", flush=True)
            return 1
        sourced = recipe_env(project, wheel, env)  # the wheel hashed once, as the team pins it once
        for name, command in steps:
            run_step(name, command, project, sourced)
    except StepFailed as failed:
        return failed.code
    print(f"uploaded files: {uploaded(project)}", flush=True)
    print(f"{time.monotonic() - t0:7.1f}s  total, from an empty folder ({folder})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
