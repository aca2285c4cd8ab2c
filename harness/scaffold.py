"""`harness init`: a project for a team, from the files in harness/templates/: a scenario for its pipeline written as
streamlets, one for its job run unchanged (with a job to replace), CI recipes with the script that installs the
harness pinned, and a .gitignore for what runs and recipes leave in the project."""

from __future__ import annotations

import shutil
from pathlib import Path

from harness.errors import HarnessError

TEMPLATES = Path(__file__).resolve().parent / "templates"
# template -> where it goes in the project
FILES = {
    "pipeline.yaml": "scenarios/pipeline.yaml",
    "job.yaml": "scenarios/job.yaml",
    "job.py": "job/job.py",
    "github-actions.yml": ".github/workflows/harness.yml",
    "gitlab-ci.yml": ".gitlab-ci.yml",
    "install-harness.sh": "ci/install-harness.sh",
    "gitignore": ".gitignore",
}


def scaffold(folder: Path) -> list[Path]:
    """Write the project's files into `folder` (created if missing); refuses, writing nothing, if any exists."""
    targets = {template: Path(folder) / place for template, place in FILES.items()}
    present = [str(path) for path in targets.values() if path.exists()]
    if present:
        raise HarnessError(f"{present[0]}: exists already; harness init writes nothing over a file (move it away)")
    for template, path in targets.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(TEMPLATES / template, path)
    return list(targets.values())
