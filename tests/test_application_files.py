"""A team's own job writing a Delta Lake table (examples/orders-lake, unchanged), under SIGKILLs: Delta's streaming
sink skips a replayed batch, a plain foreachBatch append writes it again (Parquet: test_application_parquet.py).
Each report's counts equal a count made here from the table's own files and log (read by this test's own code,
not the harness's) and acks.csv."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow.dataset as ds
import pytest
import yaml

from harness.checker.check import check_run
from harness.runner.console import Console
from harness.runner.run import run_scenario
from harness.scenario.parse import parse_scenario
from tests.evidence_helpers import acked, why
from tests.test_faults import ROOT, history

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]
EXAMPLE = ROOT / "examples" / "orders-lake"


def _run(tmp_path, scenario: str, faults: int | None = None):
    """The example's scenario run and checked; `faults`: only its first ones played."""
    raw = yaml.safe_load((EXAMPLE / f"{scenario}.yaml").read_text())
    raw["faults"] = raw.get("faults", [])[:faults]
    run_dir = tmp_path / scenario
    summary = run_scenario(parse_scenario(raw, EXAMPLE), run_dir, console=Console(quiet=True))
    assert summary.status == "complete" and not summary.failed_streamlets, why(summary)
    return run_dir, check_run(run_dir)


def _ids(files: list[Path]) -> Counter:
    """(key, seq) of every row of these data files (their order_id "key-seq")."""
    if not files:
        return Counter()
    ids = ds.dataset([str(f) for f in files], format="parquet").to_table(columns=["order_id"]).column(0)
    return Counter((k, int(s)) for k, s in (i.rsplit("-", 1) for i in ids.to_pylist()))


def _delta_state(table: Path) -> set[str]:
    """The data files the Delta log has live: its JSON commits replayed."""
    live: set[str] = set()
    for commit in sorted((table / "_delta_log").glob("*.json")):
        for line in filter(None, commit.read_text().splitlines()):
            action = json.loads(line)
            live |= {action["add"]["path"]} if "add" in action else set()
            live -= {action["remove"]["path"]} if "remove" in action else set()
    return live


def _sink_state(table: Path) -> set[str]:
    """The data files Spark's file sink committed: every entry of its metadata log from the last compact file on."""
    logs = [p for p in (table / "_spark_metadata").iterdir() if not p.name.startswith(".")]  # not the .crc files
    entries = sorted(logs, key=lambda p: int(p.name.split(".")[0]))
    start = max((i for i, p in enumerate(entries) if p.name.endswith(".compact")), default=0)
    listed = [json.loads(line) for p in entries[start:] for line in p.read_text().splitlines()[1:] if line]
    return {str(Path(e["path"].removeprefix("file:")).relative_to(table)) for e in listed if e["action"] == "add"}


def _counted(run_dir: Path, report, state_files: set[str]) -> tuple[Counter, Counter]:
    table = run_dir / "work" / "lake" / "table"
    written = [p for p in table.rglob("part-*.parquet") if "_delta_log" not in p.parts]
    rows = _ids([table / f for f in state_files])
    deliveries = _ids(written)
    sent = acked(run_dir)
    assert report.counts.lost == len(sent - set(rows)) == 0
    assert report.counts.duplicated_in_state == sum(1 for r, n in rows.items() if n > 1 and r in sent)
    assert report.counts.duplicated_deliveries == sum(1 for r, n in deliveries.items() if n > 1 and r in sent)
    assert report.counts.phantom == len((set(rows) | set(deliveries)) - sent) == 0
    return rows, deliveries


def _kills(run_dir: Path) -> list[dict]:
    return [e for e in history(run_dir) if e["event"] == "fault_begun" and e["kind"] == "kill-driver"]


@pytest.mark.long  # make test-long: Delta's streaming sink under kills is in test_sinks.py's suite run already
def test_deltas_streaming_sink_skips_the_replayed_batch(tmp_path):
    run_dir, report = _run(tmp_path, "delta")
    _counted(run_dir, report, _delta_state(run_dir / "work" / "lake" / "table"))
    assert len(_kills(run_dir)) == 2 and report.counts.duplicated_in_state == 0
    assert report.verdict in ("exactly-once", "effectively-exactly-once") and report.outcome == "pass"
    exported = next(e for e in history(run_dir) if e["event"] == "output_exported")
    assert exported["format"] == "delta" and exported["observed"] == "fully" and exported["cut_files"] == []


@pytest.mark.long  # a job's file output in make test: the windowed Parquet one; Delta's sinks: test_sinks.py
def test_a_plain_foreach_batch_append_to_delta_appends_the_replayed_batch_again(tmp_path):
    run_dir, report = _run(tmp_path, "delta-append")
    rows, _ = _counted(run_dir, report, _delta_state(run_dir / "work" / "lake" / "table"))
    # The kill came after the table took the batch, before the checkpoint did: its rows are in the table twice.
    held = _kills(run_dir)[0]
    assert held["at"] == "in-flight" and "held_batch" in held, held
    assert report.counts.duplicated_in_state > 0 and max(rows.values()) == 2
    assert report.verdict == "at-least-once" and report.outcome == "pass", report.expectations
