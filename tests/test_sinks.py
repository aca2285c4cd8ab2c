"""Spark's own sinks as users write them, under driver kills, judged from their files and checked here against a
count made from the same files without the checker."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from harness.checker.check import check_run
from harness.runner.console import Console
from harness.runner.run import run_scenario
from harness.scenario.model import load_scenario
from tests.evidence_helpers import acked

pytestmark = pytest.mark.e2e
SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"


def _metadata_files(table: Path) -> set[str]:
    """The data files Spark's metadata log lists as committed (read here, independently of the sink's export)."""
    names, deleted = set(), set()
    for log in (table / "_spark_metadata").iterdir():
        if not log.name.removesuffix(".compact").isdigit():
            continue
        for line in log.read_text().splitlines()[1:]:
            if line.strip():
                entry = json.loads(line)
                (deleted if entry.get("action") == "delete" else names).add(Path(entry["path"]).name)
    return names - deleted


def _finished(path: Path) -> bool:
    """A Parquet file is finished when it ends with its footer: the magic bytes at both ends."""
    size = path.stat().st_size
    if size < 8:
        return False
    with path.open("rb") as f:
        head = f.read(4)
        f.seek(size - 4)
        return head == b"PAR1" and f.read(4) == b"PAR1"


def _records(files) -> Counter:
    copies = Counter()
    for path in files:
        if not _finished(path):  # a file a killed attempt left empty or cut: no reader gets a row from it
            continue
        table = pq.read_table(path, columns=["key", "seq"])
        copies.update(zip(table.column("key").to_pylist(), table.column("seq").to_pylist()))
    return copies


def test_the_parquet_file_sink_under_repeated_sigkills_is_judged_as_its_files_and_metadata_log_say(tmp_path):
    run_dir = tmp_path / "run"
    summary = run_scenario(load_scenario(SCENARIOS / "file-sink-kills.yaml"), run_dir, console=Console(quiet=True))
    assert summary.status == "complete" and summary.faults_played == 3 and not summary.failed_streamlets

    table = run_dir / "work" / "files" / "table"
    written = sorted(table.glob("part-*.parquet"))
    committed = _metadata_files(table)
    assert committed and committed <= {p.name for p in written}
    state = _records(p for p in written if p.name in committed)
    delivered = _records(written)
    sent = acked(run_dir)

    report = check_run(run_dir)
    c = report.counts
    assert c.lost == len(sent - set(state))
    assert c.duplicated_in_state == sum(1 for r, n in state.items() if n > 1 and r in sent)
    assert c.duplicated_deliveries == sum(1 for r, n in delivered.items() if n > 1 and r in sent)
    assert c.phantom == 0 and report.verdict != "unknown"
    assert [f.kind for f in report.faults] == ["kill-driver"] * 3 and all(f.recovery_s is not None for f in report.faults)
