"""Any file content given as a scenario: a valid Scenario or one ScenarioError line, never another exception.

Random bytes, random YAML trees built from the real field names (so they reach deep into the
parser), hostile YAML (alias bombs, deep nesting, other encodings), and the CLI's one line + exit 2.
"""

from __future__ import annotations

import textwrap

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.scenario.parse import ScenarioError, load_scenario
from harness.scenario.source import MAX_VALUES
from tests.conftest import run_harness
from tests.test_bad_input import assert_one_line_error

FIELD_NAMES = [
    "name",
    "description",
    "blueprint",
    "workload",
    "faults",
    "expectations",
    "cluster",
    "store",
    "source_options",
    "streamlets",
    "connections",
    "topics",
    "kind",
    "settings",
    "ingress",
    "egress",
    "processor",
    "ingress.out",
    "egress.in",
    "processor.in",
    "processor.out",
    "mode",
    "topic",
    "partitions",
    "rate",
    "duration_s",
    "keys",
    "target",
    "start_s",
    "every_s",
    "times",
    "signal",
    "at",
    "end_to_end",
    "per_hop",
    "max_lost",
    "brokers",
]
VALUES = [
    "ingress",
    "egress",
    "processor",
    "upsert",
    "append",
    "kill-driver",
    "SIGKILL",
    "exactly-once",
    "ingress.out",
    "egress.in",
    "processor.in",
    "after-write",
    "source",
]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True),
    st.sampled_from(VALUES),
    st.text(max_size=8),
)
trees = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(FIELD_NAMES), inner, max_size=5),
        st.dictionaries(st.one_of(st.integers(), st.booleans(), st.text(max_size=4)), inner, max_size=2),
    ),
    max_leaves=30,
)

GOOD = {
    "name": "ok",
    "blueprint": {
        "streamlets": {"ingress": {"kind": "ingress"}, "egress": {"kind": "egress"}},
        "connections": {"ingress.out": ["egress.in"]},
    },
    "workload": {"rate": 50, "duration_s": 5},
}


def _load(tmp_path, data: bytes):
    path = tmp_path / "s.yaml"
    path.write_bytes(data)
    try:
        load_scenario(path)
    except ScenarioError as exc:
        assert "\n" not in str(exc) and str(exc).startswith(str(path)), str(exc)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=400))
def test_random_bytes(tmp_path, data):
    _load(tmp_path, data)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(trees)
def test_random_yaml_trees(tmp_path, tree):
    _load(tmp_path, yaml.safe_dump(tree).encode())


RICH = yaml.safe_load(
    textwrap.dedent("""
    name: rich
    description: every section
    cluster: {brokers: 3}
    blueprint:
      streamlets:
        ingress: {kind: ingress}
        processor: {kind: processor, settings: {crash_probability: 0.1}}
        egress: {kind: egress, settings: {mode: upsert}}
      connections:
        ingress.out: [processor.in]
        processor.out: [egress.in]
      topics:
        ingress.out: {name: ingested, partitions: 2, replication: 3, config: {min.insync.replicas: 2}}
    workload: {topic: {name: source, partitions: 2}, keys: 4, rate: 50, duration_s: 5, late_share: 0.1, seed: 3}
    source_options:
      processor: {trigger: processingTime, trigger_interval: 1 second, fail_on_data_loss: false,
                  starting_offsets: earliest}
    faults:
      - {kind: kill-driver, target: processor, start_s: 2, every_s: 2, times: 2, signal: SIGKILL, at: after-write}
      - {kind: broker-kill, target: broker-2, start_s: 3}
      - {kind: retention-shrink, target: processor, start_s: 4}
      - {kind: redeploy, target: egress, start_s: 4, starting: latest}
    expectations:
      end_to_end: at-least-once
      per_hop: {ingested: exactly-once}
      max_lost: 0
      lost_causes: [retention]
      max_recovery_s: 60
""")
)


def _paths(tree, prefix=()):
    yield prefix
    children = tree.items() if isinstance(tree, dict) else enumerate(tree) if isinstance(tree, list) else ()
    for key, value in children:
        yield from _paths(value, prefix + (key,))


def _replaced(tree, path, value):
    if not path:
        return value
    copy = dict(tree) if isinstance(tree, dict) else list(tree)
    copy[path[0]] = _replaced(tree[path[0]], path[1:], value)
    return copy


def test_the_rich_scenario_is_valid(tmp_path):
    path = tmp_path / "rich.yaml"
    path.write_text(yaml.safe_dump(RICH))
    faults = load_scenario(path).faults
    # the four of its faults section, and workload.late_share: the late-events fault as a workload setting
    assert len(faults) == 5 and (faults[-1].kind, faults[-1].target, faults[-1].params["share"]) == (
        "late-events",
        "generator",
        0.1,
    )


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(list(_paths(RICH))[1:]), trees)
def test_a_valid_scenario_with_any_node_replaced(tmp_path, path, tree):
    """Every node of a valid scenario, at any depth, replaced by a random tree."""
    _load(tmp_path, yaml.safe_dump(_replaced(RICH, path, tree)).encode())


def test_hostile_files_are_one_line_errors(tmp_path):
    laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
        f"*{chr(97 + i)}, "
        f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(8)
    )
    cases = {
        "bomb.yaml": (laughs.encode(), f"expands to more than {MAX_VALUES:,} values"),
        "deep.yaml": (("[" * 5000 + "]" * 5000).encode(), "nested"),
        "deep-map.yaml": ("".join("  " * i + f"k{i}:\n" for i in range(60)).encode(), "nested more than"),
        "latin1.yaml": ("name: caf\u00e9\n".encode("latin-1"), "not UTF-8 text (byte 0xe9 at offset 9)"),
        "utf16.yaml": ("name: x\n".encode("utf-16"), "not UTF-8 text"),
        "binary.yaml": (bytes(range(256)) * 4, "not UTF-8 text"),
        "huge.yaml": (b"# " + b"x" * (2 << 20), "larger than 1024 KiB"),
        "int-key.yaml": (b"1: a\nname: x\n", "a field name must be text, got 1"),
        "two-docs.yaml": (b"name: a\n---\nname: b\n", "not valid YAML"),
        "nan-rate.yaml": (
            yaml.safe_dump({**GOOD, "workload": {"rate": float("nan")}}).encode(),
            "workload.rate: expected a finite number",
        ),
        "too-many.yaml": (
            yaml.safe_dump({**GOOD, "workload": {"rate": 100000, "duration_s": 3600}}).encode(),
            "at most 50,000,000 can be checked",
        ),
        "too-fast.yaml": (
            yaml.safe_dump({**GOOD, "workload": {"rate": 1e6}}).encode(),
            "workload.rate: expected a value from 0.1 to 100000",
        ),
    }
    for name, (data, fragment) in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        try:
            load_scenario(path)
        except ScenarioError as exc:
            assert fragment in str(exc), (name, str(exc))
        else:
            raise AssertionError(f"{name} was accepted")
    for command in (["run", str(tmp_path / "latin1.yaml")], ["scenarios", str(tmp_path)]):
        assert_one_line_error(run_harness(*command), "not UTF-8 text")


def test_a_plain_scenario_still_loads(tmp_path):
    path = tmp_path / "ok.yaml"
    path.write_text(textwrap.dedent(yaml.safe_dump(GOOD)))
    assert load_scenario(path).workload.rate == 50
