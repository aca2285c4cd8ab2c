"""Every scenario and matrix shipped on 2026-11-25 (tests/frozen_scenarios/, copied then and never edited) is
still accepted as it is: the scenario format only grows."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.matrix.spec import load_matrix
from harness.scenario.parse import parse_scenario
from harness.scenario.source import read_tree

ROOT = Path(__file__).resolve().parent.parent
FROZEN = Path(__file__).resolve().parent / "frozen_scenarios"
FILES = sorted(FROZEN.rglob("*.yaml"))
MATRICES = {path for path in FILES if "base" in (read_tree(path) or {})}


def test_the_frozen_set_is_every_scenario_shipped_then():
    assert len(FILES) == 42 and len(MATRICES) == 2


@pytest.mark.parametrize("path", [p for p in FILES if p not in MATRICES], ids=lambda p: str(p.relative_to(FROZEN)))
def test_a_frozen_scenario_is_accepted(path):
    # The folder of the shipped copy: a user streamlet's module (examples/orders) is imported from there.
    scenario = parse_scenario(read_tree(path), ROOT / path.parent.relative_to(FROZEN))
    assert scenario.name == read_tree(path)["name"]


@pytest.mark.parametrize("path", sorted(MATRICES), ids=lambda p: p.name)
def test_a_frozen_matrix_is_accepted(path):
    assert load_matrix(path).cells
