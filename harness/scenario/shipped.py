"""The scenarios shipped with the harness, and naming one by its name (`harness run smoke`)."""

from __future__ import annotations

from pathlib import Path

from harness.paths import shipped
from harness.scenario.source import ScenarioError

SCENARIOS_DIR = shipped("scenarios")


def scenario_path(given: Path | str) -> Path:
    """`given` as a path when it is one; else the shipped scenario of that name (smoke: scenarios/smoke.yaml)."""
    path = Path(given)
    if path.exists() or path.suffix or len(path.parts) > 1:
        return path
    shipped = SCENARIOS_DIR / f"{path}.yaml"
    if shipped.is_file():
        return shipped
    raise ScenarioError(f"{given}: no such scenario file, and no shipped scenario of that name (harness scenarios)")


def scenario_files(paths: list[Path]) -> list[Path]:
    """Scenario files from paths given: a file (or a shipped scenario's name) itself, a folder's *.yaml."""
    found: list[Path] = []
    for given in paths:
        path = scenario_path(given)
        if path.is_dir():
            files = sorted(path.glob("*.yaml"))
            if not files:
                raise ScenarioError(f"{path}: no scenario files (*.yaml) in this folder")
            found += files
        else:
            found.append(path)
    return found
