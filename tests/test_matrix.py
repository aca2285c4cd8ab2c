"""`harness matrix`: the grid file (patches, validation), the grid's report, and a real two-cell matrix whose
cells must match its runs' own reports, cut short by Ctrl-C and resumed: the same pipeline under the same kill on
the harness's own Spark and on 3.5.7 (Spark as an axis), each run's versions.json and drivers saying which ran."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from harness.matrix.render import render_markdown, summarize
from harness.matrix.spec import MatrixError, load_matrix, merge
from harness.matrix.state import MatrixState, RunResult, load_state
from harness.spark import versions
from tests.conftest import HARNESS, run_harness

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "scenarios" / "matrix" / "guarantees.yaml"

BASE = """name: base
blueprint:
  streamlets:
    ingress: {kind: ingress}
    egress: {kind: egress, settings: {mode: upsert}}
  connections: {ingress.out: [egress.in]}
workload: {rate: 100, duration_s: 12, keys: 4}
expectations: {end_to_end: exactly-once}
"""

SMALL = """name: small
base: base.yaml
duration_s: 10
rows:
  append: {blueprint: {streamlets: {egress: {settings: {mode: append}}}}}
columns:
  no fault: {faults: []}
  kill after a write: {faults: [{kind: kill-driver, target: egress, start_s: 3, at: after-write, restart_after_s: 1}]}
"""


OTHER_SPARK = versions.other_versions()[0]  # the oldest verified Spark besides the harness's own
SPARK_AXIS = f"""name: spark-axis
base: base.yaml
duration_s: 10
rows:
  append:
    blueprint: {{streamlets: {{egress: {{settings: {{mode: append}}}}}}}}
    faults: [{{kind: kill-driver, target: egress, start_s: 3, at: after-write, restart_after_s: 1}}]
columns:
  own: {{}}
  Spark {OTHER_SPARK}: {{cluster: {{spark: {{version: {OTHER_SPARK}}}}}}}
"""


def _write(folder: Path, matrix: str, base: str = BASE) -> Path:
    (folder / "base.yaml").write_text(base)
    (folder / "m.yaml").write_text(matrix)
    return folder / "m.yaml"


def test_a_patch_merges_mappings_replaces_the_rest_and_null_removes():
    base = {"a": {"b": 1, "c": [1, 2]}, "d": 1}
    assert merge(base, {"a": {"c": [3]}, "d": None, "e": 2}) == {"a": {"b": 1, "c": [3]}, "e": 2}
    assert base == {"a": {"b": 1, "c": [1, 2]}, "d": 1}, "the base is not changed"


def test_each_cell_is_the_base_patched_by_its_row_and_column_without_the_base_expectations(tmp_path):
    spec = load_matrix(_write(tmp_path, SMALL))
    assert spec.rows == ("append",) and spec.columns == ("no fault", "kill after a write") and spec.seeds() == [1]
    killed = spec.cell("append", "kill after a write")
    assert killed.scenario.blueprint.streamlets["egress"].settings["mode"] == "append"
    assert [r.kind for r in killed.scenario.faults] == ["kill-driver"] and not spec.cell(
        "append", "no fault"
    ).scenario.faults
    assert killed.slug == "append--kill-after-a-write" and "expectations" not in killed.raw
    assert load_matrix(tmp_path / "m.yaml").digest == spec.digest
    (tmp_path / "m.yaml").write_text(SMALL.replace("duration_s: 10", "duration_s: 11"))
    assert load_matrix(tmp_path / "m.yaml").digest != spec.digest, "a change to the runs changes the digest"


def test_the_shipped_matrix_is_valid():
    spec = load_matrix(SHIPPED)
    assert len(spec.rows) >= 4 and len(spec.columns) >= 5 and spec.repeats >= 2


@pytest.mark.parametrize(
    "matrix, message",
    [
        (SMALL.replace("base: base.yaml\n", ""), "m.yaml: matrix.base: required field is missing"),
        (SMALL.replace("base: base.yaml", "base: nowhere.yaml"), "m.yaml: matrix.base: "),
        (SMALL + "colour: red\n", "m.yaml: matrix.colour: unknown field"),
        (
            SMALL.replace("mode: append", "mode: sideways"),
            "m.yaml: cell 'append' x 'no fault': blueprint.streamlets.egress.settings.mode: ",
        ),
        (
            SMALL.replace("target: egress", "target: nobody"),
            "m.yaml: cell 'append' x 'kill after a write': faults[0].target: ",
        ),
        (
            SMALL.replace("  no fault: {faults: []}", "  no fault: [1, 2]"),
            "m.yaml: matrix.columns.no fault: expected a mapping",
        ),
        (
            SMALL.replace("  no fault: {faults: []}", "  No Fault!: {}\n  no fault: {faults: []}"),
            "names the same folder as",
        ),
        (SMALL.replace("duration_s: 10", "repeats: 0"), "m.yaml: matrix.repeats: expected a value from 1"),
        (
            SMALL.replace(
                "rows:\n  append: {blueprint: {streamlets: {egress: {settings: {mode: append}}}}}", "rows: {}"
            ),
            "m.yaml: matrix.rows: expected at least one entry",
        ),
    ],
)
def test_a_bad_matrix_is_one_line_naming_the_file_the_cell_and_the_field(tmp_path, matrix, message):
    path = _write(tmp_path, matrix)
    with pytest.raises(MatrixError) as error:
        load_matrix(path)
    assert message in str(error.value) and "\n" not in str(error.value)
    result = run_harness("matrix", str(path), "--out", str(tmp_path / "out"))
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists(), "nothing runs, nothing is written"


def test_a_missing_matrix_file_is_one_line_and_exit_2(tmp_path):
    result = run_harness("matrix", str(tmp_path / "nowhere.yaml"))
    assert (
        result.returncode == 2
        and result.stderr.strip() == f"harness: error: {tmp_path / 'nowhere.yaml'}: no such matrix file"
    )


def test_a_row_and_a_column_cannot_both_name_a_whole_scenario(tmp_path):
    path = _write(
        tmp_path,
        SMALL.replace("  append: {blueprint", "  other: {scenario: base.yaml}\n  append: {blueprint").replace(
            "  no fault: {faults: []}", "  no fault: {scenario: base.yaml}"
        ),
    )
    with pytest.raises(
        MatrixError, match="cell 'other' x 'no fault': both its row and its column name a whole scenario"
    ):
        load_matrix(path)


def _result(row, column, seed, verdict, lost, duplicated=0, cost=(None, None, None)):
    return RunResult(
        row,
        column,
        seed,
        f"runs/{row}--{column}--seed{seed}",
        "complete",
        verdict,
        "pass",
        100,
        lost,
        duplicated,
        0,
        0,
        duplicated,
        1,
        12.5,
        0,
        60.0,
        0,
        None,
        *cost,
    )


def test_the_grid_shows_agreement_differences_and_unknown_counts():
    state = MatrixState(
        "m", "", "d", ["append", "upsert"], ["kill", "pause"], [1, 2], None, "2026-11-23 02:00", {"cpus": 2}
    )
    state.runs = [
        _result("append", "kill", 1, "at-least-once", 0, 40, (195.2, 1.24, 3.4)),
        _result("append", "kill", 2, "at-least-once", 0, 52, (210.4, 1.21, 4.06)),
        _result("upsert", "kill", 1, "effectively-exactly-once", 0, 40),
        _result("upsert", "kill", 2, "exactly-once", 0),
        _result("append", "pause", 1, "unknown", None),
    ]
    cells = {(c.row, c.column): c for c in summarize(state)}
    assert cells[("append", "kill")].agreed and cells[("append", "kill")].verdict == "at-least-once"
    assert not cells[("upsert", "kill")].agreed and cells[("upsert", "kill")].verdict == "varies"
    assert cells[("upsert", "pause")].verdict == "not run" and cells[("append", "pause")].runs == 1
    text = render_markdown(state)
    assert "2 of 2 agree" in text and "runs differ: effectively-exactly-once, exactly-once" in text
    assert "1 of 2 runs so far" in text and "lost unknown" in text and "duplicated" in text
    assert "[seed 1](runs/append--kill--seed1/report.html)" in text
    # What the guarantee cost, from the same runs; a run that measured none leaves the cell's cost unknown.
    assert "throughput 195-210 records/s, latency p50 1.2 s, p99 3.4-4.1 s" in text
    assert "throughput unknown, latency p50 unknown, p99 unknown" in text
    assert "| 195 | 1.24 | 3.40 |" in text and "| unknown | unknown | unknown |" in text


def test_a_folder_holding_another_matrix_is_not_resumed(tmp_path):
    spec = load_matrix(_write(tmp_path, SMALL))
    out = tmp_path / "out"
    out.mkdir()
    (out / "matrix.json").write_text(
        json.dumps(
            {
                "state_version": 1,
                "name": "small",
                "description": "",
                "digest": "other",
                "rows": [],
                "columns": [],
                "seeds": [1],
                "duration_s": None,
                "started": "",
                "machine": {},
                "runs": [],
            }
        )
    )
    with pytest.raises(MatrixError, match="holds the runs of another matrix"):
        load_state(out, spec)
    (out / "matrix.json").write_text("{torn")
    with pytest.raises(MatrixError, match="not a matrix state this harness can resume"):
        load_state(out, spec)


@pytest.mark.e2e
@pytest.mark.long  # two Spark versions' drivers, one environment built on first use: about 5 minutes
def test_a_matrix_across_spark_versions_cut_short_keeps_its_finished_cell_and_resumes_matching_the_runs_reports(
    tmp_path,
):
    versions.ensure(OTHER_SPARK, say=lambda _: None)  # built once (pip, Maven) before the timing below, not during it
    path = _write(tmp_path, SPARK_AXIS)
    out = tmp_path / "out"
    command = HARNESS + ["matrix", str(path), "--out", str(out)]
    first = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT, start_new_session=True
    )
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:  # Ctrl-C once the first run is in the grid, while the second one starts
        state = json.loads((out / "matrix.json").read_text()) if (out / "matrix.json").exists() else {"runs": []}
        if state["runs"]:
            break
        assert first.poll() is None, first.stdout.read()
        time.sleep(0.5)
    time.sleep(3)
    os.kill(first.pid, signal.SIGINT)
    output, _ = first.communicate(timeout=120)
    assert first.returncode == 130, output
    state = json.loads((out / "matrix.json").read_text())
    assert [(r["row"], r["column"]) for r in state["runs"]] == [("append", "own")] and not state["finished"]
    cut = out / "runs" / f"append--spark-{OTHER_SPARK.replace('.', '-')}--seed1"
    assert cut.is_dir(), "the cut run's evidence is kept"

    done_before = (out / "runs" / "append--own--seed1" / "report.json").stat().st_mtime
    second = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "resuming: 1 of 2 runs already done" in second.stdout
    assert (out / "runs" / "append--own--seed1" / "report.json").stat().st_mtime == done_before, (
        "a finished run is not run again"
    )
    assert list((out / "runs").glob(f"{cut.name}.cut-*")), "the cut run was set aside, not deleted"

    state = json.loads((out / "matrix.json").read_text())
    assert state["finished"] and len(state["runs"]) == 2
    for cell in state["cells"]:
        [(seed, link)] = cell["links"]
        report = json.loads((out / link).with_name("report.json").read_text())
        assert cell["verdict"] == report["verdict"]["end_to_end"] and cell["agreed"]
        assert cell["lost"] == [report["counts"]["lost"]]
        assert cell["duplicated_deliveries"] == [report["counts"]["duplicated_deliveries"]]
    # append writes the replayed batch again: on either Spark, the kill after a write leaves copies in its state
    for cell in state["cells"]:
        assert cell["verdict"] == "at-least-once" and cell["lost"] == [0] and cell["extra_kept"][0] > 0, cell["column"]
    ran = {r["column"]: r["spark"] for r in state["runs"]}
    assert ran == {"own": versions.own_version(), f"Spark {OTHER_SPARK}": OTHER_SPARK}
    for run in state["runs"]:  # what the runner recorded, and what each driver's SparkSession said it was
        run_dir = out / run["run_dir"]
        assert json.loads((run_dir / "versions.json").read_text())["pyspark"] == run["spark"]
        started = {
            e["spark_version"]
            for path in (run_dir / "progress").glob("*.jsonl")
            for e in map(json.loads, path.open())
            if e["event"] == "started"
        }
        assert started == {run["spark"]}
    html = (out / "matrix.html").read_text()
    assert "runs/append--own--seed1/report.html" in html and "at-least-once" in html
    markdown = (out / "matrix.md").read_text()
    assert "| **append** |" in markdown and f"Spark (the drivers'): {versions.own_version()}, {OTHER_SPARK}" in markdown
    assert "## Where the guarantee differs\n\nThe same verdict in every column of each row." in markdown
    again = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert again.returncode == 0 and "resuming: 2 of 2 runs already done" in again.stdout
