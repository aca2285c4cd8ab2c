"""A scenario's sections are declared once (harness/scenario/sections.py): the parser reads through the declaration
(a key it does not declare is refused, a field's default is the declared one) and docs/scenarios.md lists each field
as declared."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.scenario.parse import parse_scenario
from harness.scenario.sections_doc import SECTIONS, rewritten

ROOT = Path(__file__).resolve().parent.parent
STREAMLETS = {"ingress": {"kind": "ingress"}, "egress": {"kind": "egress"}}
BASE = {"name": "x", "blueprint": {"streamlets": STREAMLETS, "connections": {"ingress.out": ["egress.in"]}}}


def test_the_docs_list_every_field_as_declared():
    page = (ROOT / "docs" / "scenarios.md").read_text()
    assert rewritten(page) == page, "run: .venv/bin/python -m harness.scenario.sections_doc docs/scenarios.md"


def test_a_declared_default_is_what_a_scenario_gets_and_an_undeclared_key_is_refused():
    scenario = parse_scenario(BASE | {"workload": {}})
    workload = next(s for s in SECTIONS if s.path == "workload")
    defaults = {f.name: f.default for f in workload.fields}
    assert (scenario.workload.keys, scenario.workload.rate, scenario.workload.workers) == (
        defaults["keys"],
        defaults["rate"],
        defaults["workers"],
    )
    with pytest.raises(HarnessError, match=r"workload\.speed: unknown field \(expected one of acks, after_faults_s"):
        parse_scenario(BASE | {"workload": {"speed": 3}})


def test_each_read_gets_a_default_of_its_own():
    """A consumer that fills in what it was given (a mapping, a list) never changes the next scenario's default."""
    workload = next(s for s in SECTIONS if s.path == "workload")
    first = workload.read({})
    first["topic"]["name"] = "changed"
    assert workload.read({})["topic"] == {} and workload.fields[0].default == {}
