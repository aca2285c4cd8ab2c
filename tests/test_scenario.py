"""Scenario files and the workload plan: validated before anything starts, deterministic by seed."""

from __future__ import annotations

import itertools
import textwrap

import pytest

from harness.scenario.model import ScenarioError, load_scenario
from harness.workload.generator import record_plan
from harness.workload.settings import WorkloadSettings
from tests.conftest import run_harness

GOOD = textwrap.dedent("""
    name: ok
    blueprint:
      streamlets:
        ingress: {kind: ingress}
        egress: {kind: egress}
      connections:
        ingress.out: [egress.in]
    workload: {rate: 50, duration_s: 5}
""")

BAD = [
    ("empty", "", "the file is empty"),
    ("bad yaml", "name: [unclosed", "not valid YAML at line 1"),
    ("wrong type", GOOD.replace("rate: 50", "rate: fast"), "workload.rate: expected int or float, got 'fast'"),
    ("unknown field", GOOD + "colour: red\n", "scenario.colour: unknown field"),
    ("missing blueprint", "name: x\nworkload: {}\n", "scenario.blueprint: required field is missing"),
    ("share out of range", GOOD.replace("rate: 50", "late_share: 2"), "workload.late_share: expected a value from 0 to 1, got 2"),
    ("unknown streamlet in options", GOOD + "source_options:\n  processor: {trigger: availableNow}\n",
     "source_options.processor: unknown streamlet 'processor'"),
    ("bad trigger", GOOD + "source_options:\n  egress: {trigger: sometimes}\n",
     "source_options.egress.trigger: expected default, processingTime or availableNow"),
    ("bad store", GOOD + "store: mysql://x\n", "store: expected sqlite or a postgresql:// URL"),
]


def test_a_good_scenario_loads(tmp_path):
    (tmp_path / "s.yaml").write_text(GOOD)
    scenario = load_scenario(tmp_path / "s.yaml")
    assert scenario.workload.rate == 50 and scenario.blueprint.order() == ["ingress", "egress"]
    assert scenario.options_for("egress").fail_on_data_loss is True


@pytest.mark.parametrize("case,text,message", BAD, ids=[b[0] for b in BAD])
def test_bad_scenarios_name_file_and_field(tmp_path, case, text, message):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    assert str(err.value).startswith(f"{path}: ")
    assert message in str(err.value)


def test_cli_rejects_a_bad_scenario_with_one_line_and_starts_nothing(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(GOOD.replace("kind: egress", "kind: egres"))
    result = run_harness("pipeline", "run", str(path), "--out", str(tmp_path / "run"))
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"harness: error: {path}: blueprint.streamlets.egress.kind: unknown streamlet kind 'egres' "
        "(known: egress, ingress, processor, window-egress, windowed-count)")
    assert not (tmp_path / "run").exists()
    missing = run_harness("pipeline", "run", str(tmp_path / "nope.yaml"))
    assert missing.returncode == 2 and "no such scenario file" in missing.stderr


def test_same_seed_same_records_and_late_ones_only_after_the_warm_up():
    settings = WorkloadSettings("b", "t", "a", keys=5, seed=42, payload_bytes=8, late_share=0.5, late_after=20)
    first = list(itertools.islice(record_plan(settings), 200))
    assert first == list(itertools.islice(record_plan(settings), 200))
    other = WorkloadSettings("b", "t", "a", keys=5, seed=43, payload_bytes=8, late_share=0.5, late_after=20)
    assert first != list(itertools.islice(record_plan(other), 200))
    assert not any(late for *_, late in first[:20]) and any(late for *_, late in first[20:])
    for key in {k for k, *_ in first}:  # seq counts from 0 per key, without gaps
        assert [s for k, s, *_ in first if k == key] == list(range(sum(1 for k, *_ in first if k == key)))
