"""A check of one's own (harness/checker/own_checks.py): named by its scenario as package.module:NAME, its module
kept in the run directory as the run begins, imported from there by the checker in a process that has nothing else
of the team's, its section and its expectation judged beside the harness's. Named wrong, it is one line before
anything starts; missing from a run directory, a gap and an unknown outcome, never a pass. The run directory is a
recorded one (the frozen chain), the longest batch counted here from its progress files."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from harness.checker.own_checks import keep_sources
from harness.errors import HarnessError
from harness.scenario import load_scenario
from tests.conftest import run_harness

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "orders" / "checked.yaml"
FROZEN = ROOT / "tests" / "frozen_runs" / "chain"
CHECK = "orders.checks:LONGEST_BATCH"


def test_a_scenario_names_its_own_check_and_states_the_expectation_it_carries():
    scenario = load_scenario(EXAMPLE)
    assert scenario.checks == (CHECK,) and scenario.expectations["max_batch_s"] == 60


@pytest.mark.parametrize(
    "checks, message",
    [
        (["nope.checks:KIND"], "checks[0]: cannot import 'nope.checks': no such module"),
        (["json:dumps"], "checks[0]: json:dumps is not a check (a harness.checker.step.Step), it is a function"),
        ([3], "checks[0]: expected package.module:NAME, got 3"),
        ([], "expectations.max_batch_s: unknown field"),  # its expectation without the check that carries it
    ],
)
def test_a_check_named_wrong_is_one_line(tmp_path, checks, message):
    raw = yaml.safe_load(EXAMPLE.read_text()) | {"checks": checks, "imports": [str(EXAMPLE.parent)]}
    (tmp_path / "scenario.yaml").write_text(yaml.safe_dump(raw))
    with pytest.raises(HarnessError) as caught:
        load_scenario(tmp_path / "scenario.yaml")
    assert message in str(caught.value) and "\n" not in str(caught.value), caught.value


def _longest_s(run: Path) -> dict[str, float]:
    """Each streamlet's longest trigger, from its progress file."""
    longest = {}
    for path in sorted((run / "progress").glob("*.jsonl")):
        events = [json.loads(line) for line in path.read_text().splitlines()]
        took = [e["progress"]["durationMs"]["triggerExecution"] for e in events if e["event"] == "progress"]
        longest[path.stem] = max(took) / 1000
    return longest


def _run(tmp_path: Path, limit: float, kept: bool = True) -> Path:
    run = tmp_path / f"chain-{limit}-{kept}"
    shutil.copytree(FROZEN, run)
    pipeline = json.loads((run / "pipeline.json").read_text())
    pipeline |= {"checks": [CHECK], "expectations": {"max_lost": 0, "max_batch_s": limit}}
    (run / "pipeline.json").write_text(json.dumps(pipeline))
    if kept:
        sys.path.insert(0, str(EXAMPLE.parent))
        try:
            keep_sources((CHECK,), run / "checks")
        finally:
            sys.path.remove(str(EXAMPLE.parent))
    return run


def _checked(run: Path) -> dict:
    """`harness check --json` on the run directory, in a process with nothing of the team's on its path."""
    done = run_harness("check", str(run), "--json")
    return json.loads(done.stdout)


def test_the_checker_imports_the_check_from_the_run_directory_and_judges_its_expectation(tmp_path):
    longest = _longest_s(FROZEN)
    report = _checked(_run(tmp_path, 60))
    section = report["sections"]["longest_batch"]
    assert section["data"] == {"longest_s": longest} and section["title"] == "Longest micro-batch"
    assert [(e["name"], e["status"]) for e in report["expectations"]] == [("max_lost", "pass"), ("max_batch_s", "pass")]
    slow = _checked(_run(tmp_path, min(longest.values())))
    [failed] = [e for e in slow["expectations"] if e["name"] == "max_batch_s"]
    assert failed["status"] == "fail" and slow["outcome"] == "fail"
    missing = _checked(_run(tmp_path, 60, kept=False))
    assert missing["outcome"] == "unknown" and "longest_batch" not in missing["sections"]
    assert any(g.startswith(f"the scenario's check {CHECK} could not be loaded") for g in missing["gaps"])
    assert [e["status"] for e in missing["expectations"] if e["name"] == "max_batch_s"] == ["unknown"]
