"""A scenario's own checks (`checks: [package.module:NAME]`, each NAME a Step as the built-in checks of
harness/checker/checks/ are): their modules are kept in the run directory as the run begins (checks/), and the
checker imports them from there, so that a run directory is judged alike wherever it is read."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from contract.plugins import PluginError, import_named
from harness.checker.step import Step


def load_check(spec: str) -> Step:
    """The Step `spec` names, from the import paths; PluginError (one line) otherwise."""
    found = import_named(spec, "NAME")
    if not isinstance(found, Step):
        raise PluginError(f"{spec} is not a check (a harness.checker.step.Step), it is a {type(found).__name__}")
    return found


def keep_sources(specs: tuple[str, ...], folder: Path) -> None:
    """Copy into `folder` the top-level module or package of each check (a package whole, its caches left)."""
    for spec in specs:
        top = spec.partition(":")[0].split(".")[0]
        found = importlib.util.find_spec(top)
        if found is None or found.origin is None:
            raise PluginError(f"{spec}: no source for module {top!r} on the import paths")
        folder.mkdir(parents=True, exist_ok=True)
        origin = Path(found.origin)
        if origin.name == "__init__.py":
            shutil.copytree(
                origin.parent, folder / top, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__")
            )
        else:
            shutil.copy2(origin, folder / origin.name)


@contextmanager
def _importing_from(folder: Path) -> Iterator[None]:
    sys.path.insert(0, str(folder))
    try:
        yield
    finally:
        sys.path.remove(str(folder))


def own_checks(specs: tuple[str, ...], folder: Path) -> tuple[list[Step], list[str]]:
    """The checks a run names, imported from the run directory's `folder`, and a gap for each that cannot be."""
    steps, gaps = [], []
    with _importing_from(folder):
        for spec in specs:
            try:
                steps.append(load_check(spec))
            except PluginError as exc:
                gaps.append(f"the scenario's check {spec} could not be loaded ({exc}); what it finds is unknown")
    return steps, gaps
