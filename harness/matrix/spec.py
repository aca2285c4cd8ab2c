"""A matrix file: a grid of scenarios, rows by columns, each cell run a few times with different seeds.

    name: guarantees
    base: ../smoke.yaml          # the scenario every cell starts from (relative to this file)
    repeats: 2                   # runs per cell, seeds 1, 2 (first_seed changes the first)
    duration_s: 40               # workload seconds of every run (default: the scenario's)
    rows:                        # name -> a patch of the base scenario
      append: {blueprint: {streamlets: {egress: {settings: {mode: append}}}}}
      upsert: {blueprint: {streamlets: {egress: {settings: {mode: upsert}}}}}
    columns:
      no fault: {faults: []}
      driver kill: {faults: [{kind: kill-driver, target: egress, start_s: 10, at: after-write}]}

A patch merges into the scenario: mappings merge key by key, anything else (a list, a value) replaces, null
removes the key. A patch may name a whole scenario instead (`scenario: FILE`), for rows that are different
blueprints or columns that are shipped scenarios. The base's expectations are dropped: a cell shows what
happened; a patch may give expectations of its own (the caveat catalog does). Every cell is validated as a
scenario before anything runs; an error names the file, the cell and the field.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.scenario.fields import BlueprintError, Fields
from harness.scenario.parse import Scenario, parse_scenario
from harness.scenario.source import ScenarioError, read_tree

SCENARIO_KEY = "scenario"  # in a patch: start from this scenario file instead of the base


class MatrixError(HarnessError):
    pass


@dataclass(frozen=True)
class Cell:
    row: str
    column: str
    scenario: Scenario
    raw: dict  # the merged scenario, as a file would hold it

    @property
    def slug(self) -> str:
        return f"{slug(self.row)}--{slug(self.column)}"


@dataclass(frozen=True)
class MatrixSpec:
    path: Path
    name: str
    description: str
    rows: tuple[str, ...]
    columns: tuple[str, ...]
    cells: tuple[Cell, ...]  # row-major
    repeats: int
    first_seed: int
    duration_s: float | None
    digest: str  # of everything that decides the runs: a folder holding another matrix's runs is not resumed

    def seeds(self) -> list[int]:
        return list(range(self.first_seed, self.first_seed + self.repeats))

    def cell(self, row: str, column: str) -> Cell:
        return next(c for c in self.cells if c.row == row and c.column == column)


def slug(name: str) -> str:
    """A name as a folder name: lower case, runs of anything else than letters and digits as one dash."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "x"


def merge(base: Any, patch: Any) -> Any:
    """`patch` over `base`: mappings merge key by key, null removes a key, anything else replaces."""
    if not isinstance(base, dict) or not isinstance(patch, dict):
        return copy.deepcopy(patch)
    merged = copy.deepcopy(base)
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = merge(merged.get(key), value)
    return merged


def load_matrix(path: Path) -> MatrixSpec:
    path = Path(path)
    if not path.is_file():
        raise MatrixError(f"{path}: no such matrix file")
    raw = read_tree(path)
    try:
        return _parse(raw, path)
    except BlueprintError as exc:
        raise MatrixError(f"{path}: {exc}") from None


def _axis(f: Fields, key: str) -> dict[str, dict]:
    entries = f.get(key, dict, required=True)
    if not entries:
        raise BlueprintError(f"{f.path}.{key}", "expected at least one entry (name: patch)")
    slugs: dict[str, str] = {}
    for name, patch in entries.items():
        if patch is not None and not isinstance(patch, dict):
            raise BlueprintError(
                f"{f.path}.{key}.{name}", f"expected a mapping (a patch of the scenario), got {patch!r}"
            )
        if slug(name) in slugs:
            raise BlueprintError(f"{f.path}.{key}.{name}", f"names the same folder as {slugs[slug(name)]!r}")
        slugs[slug(name)] = name
    return {name: patch or {} for name, patch in entries.items()}


def _scenario_file(folder: Path, where: str, name: Any) -> tuple[dict, Path]:
    """A scenario a cell starts from, without its expectations (a cell shows what happened), and its folder."""
    if not isinstance(name, str):
        raise BlueprintError(where, f"expected a scenario file name, got {name!r}")
    file = (folder / name).resolve()
    try:
        tree = read_tree(file)
    except ScenarioError as exc:
        raise BlueprintError(where, str(exc)) from None
    if not isinstance(tree, dict):
        raise BlueprintError(where, f"{name}: not a scenario (a mapping)")
    return {k: v for k, v in tree.items() if k != "expectations"}, file.parent


def _parse(raw: Any, path: Path) -> MatrixSpec:
    folder = path.parent.resolve()
    f = Fields(raw, "matrix", {"name", "description", "base", "repeats", "first_seed", "duration_s", "rows", "columns"})
    name = f.get("name", str, required=True)
    base, base_folder = _scenario_file(folder, "matrix.base", f.get("base", str, required=True))
    repeats = f.get("repeats", int, 1, minimum=1, maximum=100)
    first_seed = f.get("first_seed", int, 1)
    duration = f.number("duration_s", None, minimum=1)
    rows, columns = _axis(f, "rows"), _axis(f, "columns")
    cells = []
    for row, row_patch in rows.items():
        for column, column_patch in columns.items():
            where = f"cell {row!r} x {column!r}"
            start, start_folder = base, base_folder
            named = [(axis, p) for axis, p in (("rows", row_patch), ("columns", column_patch)) if SCENARIO_KEY in p]
            if len(named) == 2:
                raise BlueprintError(where, "both its row and its column name a whole scenario; only one may")
            if named:
                axis, patch = named[0]
                label = row if axis == "rows" else column
                start, start_folder = _scenario_file(
                    folder, f"matrix.{axis}.{label}.{SCENARIO_KEY}", patch[SCENARIO_KEY]
                )
            merged = merge(
                merge(start, {k: v for k, v in row_patch.items() if k != SCENARIO_KEY}),
                {k: v for k, v in column_patch.items() if k != SCENARIO_KEY},
            )
            merged["name"] = f"{slug(name)}-{slug(row)}--{slug(column)}"
            try:
                scenario = parse_scenario(merged, start_folder)
            except BlueprintError as exc:
                raise BlueprintError(f"{where}: {exc.path}", str(exc)[len(exc.path) + 2 :]) from None
            cells.append(Cell(row, column, scenario, merged))
    digest = hashlib.sha256(
        json.dumps(
            {"cells": [c.raw for c in cells], "repeats": repeats, "first_seed": first_seed, "duration_s": duration},
            sort_keys=True,
            default=str,
        ).encode()
    ).hexdigest()[:16]
    return MatrixSpec(
        path,
        name,
        f.get("description", str, ""),
        tuple(rows),
        tuple(columns),
        tuple(cells),
        repeats,
        first_seed,
        duration,
        digest,
    )
