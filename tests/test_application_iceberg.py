"""A team's own job writing an Apache Iceberg table (examples/orders-iceberg, unchanged), both ways in one run:
Iceberg's streaming sink and a foreachBatch append, each driver SIGKILLed with a batch in flight (the example's
first kill; its second, at any moment, adds a restart's minute on a busy machine and nothing the counts do not
show). The sink skips the replayed epoch (its files stay on disk, never committed); the append commits the batch
again. Each output's counts equal a count made here from the table's own metadata, manifests and data files (read
by this test's own code, not the harness's) and acks.csv."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import fastavro
import pyarrow.dataset as ds
import pytest
import yaml

from harness.checker.check import check_run
from harness.checker.counts import HOP_FINDINGS, VERDICT
from harness.checker.expect import EXPECTATIONS
from harness.runner.console import Console
from harness.runner.run import run_scenario
from harness.scenario.parse import parse_scenario
from tests.evidence_helpers import acked, why
from tests.test_faults import ROOT, history

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]
EXAMPLE = ROOT / "examples" / "orders-iceberg"
WAYS = {"stream": "iceberg-stream", "append": "iceberg-append"}  # application -> its --write


@pytest.fixture(scope="module")
def both_ways(tmp_path_factory):
    """The example's stream.yaml with a second application, the append, writing a second output: two drivers in
    one run, each killed in flight."""
    raw = yaml.safe_load((EXAMPLE / "stream.yaml").read_text())
    job = raw["applications"].pop("orders")
    raw["applications"] = {}
    for app, write in WAYS.items():
        command = [f"${{path.{app}_lake}}" if arg == "${path.lake}" else arg for arg in job["command"]]
        raw["applications"][app] = {**job, "command": command[:-1] + [write]}
    lake = raw["outputs"].pop("lake")
    raw["outputs"] = {f"{app}_lake": {**lake, "written_by": app} for app in WAYS}
    in_flight = next(fault for fault in raw["faults"] if fault.get("at") == "in-flight")
    raw["faults"] = [{**in_flight, "target": app} for app in WAYS]
    raw.pop("expectations")
    run_dir = tmp_path_factory.mktemp("iceberg") / "run"
    summary = run_scenario(parse_scenario(raw, EXAMPLE), run_dir, console=Console(quiet=True))
    assert summary.status == "complete" and not summary.failed_streamlets and summary.faults_played == 2, why(summary)
    return run_dir, check_run(run_dir)


def _live(table: Path) -> dict[str, set[int]]:
    """The data files of the table's current snapshot (its version hint, metadata, manifest list and manifests),
    each with the positions of its rows the snapshot's position delete files delete (read with pyarrow)."""
    metadata = table / "metadata"
    version = (metadata / "version-hint.text").read_text().strip()
    current = json.loads((metadata / f"v{version}.metadata.json").read_text())
    snapshot = next(s for s in current["snapshots"] if s["snapshot-id"] == current["current-snapshot-id"])
    with open(snapshot["manifest-list"], "rb") as f:
        manifests = list(fastavro.reader(f))
    files: dict[str, set[int]] = {}
    deletes = []
    for manifest in manifests:
        with open(manifest["manifest_path"], "rb") as f:
            live = [e["data_file"]["file_path"] for e in fastavro.reader(f) if e["status"] != 2]
        if manifest.get("content", 0):
            deletes += live
        else:
            files.update({Path(path).name: set() for path in live})
    for path in deletes:
        for row in ds.dataset(path.removeprefix("file:"), format="parquet").to_table(["file_path", "pos"]).to_pylist():
            files[Path(row["file_path"]).name].add(row["pos"])
    return files


def _committed(table: Path) -> set[str]:
    return set(_live(table))


def _rows(table: Path, live: dict[str, set[int]]) -> Counter:
    """(key, seq) of the rows a reader of the table sees: its live files' rows but those deleted."""
    found = Counter()
    for path in (table / "data").rglob("*.parquet"):
        if path.name in live:
            ids = ds.dataset(str(path), format="parquet").to_table(["order_id"]).column(0).to_pylist()
            found.update(_id(x) for i, x in enumerate(ids) if i not in live[path.name])
    return found


def _id(order_id: str) -> tuple[str, int]:
    key, seq = order_id.rsplit("-", 1)
    return key, int(seq)


def _ids(files: list[Path]) -> Counter:
    """(key, seq) of every row of these data files (their order_id "key-seq")."""
    if not files:
        return Counter()
    ids = ds.dataset([str(f) for f in files], format="parquet").to_table(columns=["order_id"]).column(0)
    return Counter((k, int(s)) for k, s in (i.rsplit("-", 1) for i in ids.to_pylist()))


def _rewrites(table: Path) -> set[str]:
    """The data files a compaction added: each `replace` snapshot's manifests of its own, their entries added."""
    metadata = table / "metadata"
    version = (metadata / "version-hint.text").read_text().strip()
    found = set()
    for snapshot in json.loads((metadata / f"v{version}.metadata.json").read_text()).get("snapshots", []):
        if snapshot["summary"]["operation"] != "replace":
            continue
        with open(snapshot["manifest-list"], "rb") as f:
            own = [m["manifest_path"] for m in fastavro.reader(f) if m["added_snapshot_id"] == snapshot["snapshot-id"]]
        for manifest in own:
            with open(manifest, "rb") as f:
                found |= {Path(e["data_file"]["file_path"]).name for e in fastavro.reader(f) if e["status"] == 1}
    return found


def _counted(run_dir: Path, report, output: str) -> tuple[Counter, Counter]:
    """The output's committed rows and its written rows but a compaction's, counted here and checked against its
    hop's counts."""
    table = run_dir / "work" / output / "table" / "sales" / "orders"
    written = sorted((table / "data").rglob("*.parquet"))
    rewrites, committed = _rewrites(table), _committed(table)
    rows = _ids([p for p in written if p.name in committed])
    deliveries = _ids([p for p in written if p.name not in rewrites])
    sent = acked(run_dir)
    counts = next(h for h in report[HOP_FINDINGS] if h.name == output).counts
    assert counts.lost == len(sent - set(rows)) == 0
    assert counts.duplicated_in_state == sum(1 for r, n in rows.items() if n > 1 and r in sent)
    assert counts.duplicated_deliveries == sum(1 for r, n in deliveries.items() if n > 1 and r in sent)
    assert counts.phantom == len((set(rows) | set(deliveries)) - sent) == 0
    return rows, deliveries


def _kills(run_dir: Path, app: str) -> list[dict]:
    return [
        e for e in history(run_dir) if e["event"] == "fault_begun" and e["kind"] == "kill-driver" and e["target"] == app
    ]


def test_icebergs_streaming_sink_skips_the_replayed_epoch_and_leaves_its_files_uncommitted(both_ways):
    run_dir, report = both_ways
    rows, deliveries = _counted(run_dir, report, "stream_lake")
    assert [k["at"] for k in _kills(run_dir, "stream")] == ["in-flight"]
    hop = next(h for h in report[HOP_FINDINGS] if h.name == "stream_lake")
    # The replay of the held epoch wrote its files again and was skipped: copies no reader of the table sees.
    assert hop.counts.duplicated_in_state == 0 and hop.counts.duplicated_deliveries > 0
    assert max(deliveries.values()) == 2 and max(rows.values()) == 1
    assert hop.verdict == "effectively-exactly-once"
    exported = next(e for e in history(run_dir) if e["event"] == "output_exported" and e["output"] == "stream_lake")
    assert exported["format"] == "iceberg" and exported["uncommitted_files"] > 0 and exported["cut_files"] == []


def test_a_foreach_batch_append_to_iceberg_commits_the_replayed_batch_again(both_ways):
    run_dir, report = both_ways
    rows, _ = _counted(run_dir, report, "append_lake")
    held = _kills(run_dir, "append")[0]
    assert held["at"] == "in-flight" and "held_batch" in held, held
    hop = next(h for h in report[HOP_FINDINGS] if h.name == "append_lake")
    assert hop.counts.duplicated_in_state > 0 and max(rows.values()) == 2
    assert hop.verdict == "at-least-once" and report[VERDICT] == "at-least-once"


@pytest.mark.long  # make test-long: beside the appends, a table compacted while the job streams
def test_a_table_compacted_while_streaming_counts_the_rewrites_in_the_state_and_not_as_deliveries(tmp_path):
    raw = yaml.safe_load((EXAMPLE / "compact.yaml").read_text())
    run_dir = tmp_path / "run"
    summary = run_scenario(parse_scenario(raw, EXAMPLE), run_dir, console=Console(quiet=True))
    assert summary.status == "complete" and not summary.failed_streamlets, why(summary)
    report = check_run(run_dir)
    rows, _ = _counted(run_dir, report, "lake")
    rewrites = _rewrites(run_dir / "work" / "lake" / "table" / "sales" / "orders")
    committed = _committed(run_dir / "work" / "lake" / "table" / "sales" / "orders")
    assert rewrites and rewrites & committed, "a compaction's files are the table's now"
    assert report[VERDICT] == "at-least-once" and report.outcome == "pass" and len(rows) == len(acked(run_dir))


@pytest.mark.long  # make test-long: beside the appends, a job upserting into its table both ways
@pytest.mark.parametrize("scenario", ["merge", "merge-cow"])
def test_a_merge_into_iceberg_holds_each_order_once_and_delivers_what_it_changed(tmp_path, scenario):
    """Merge-on-read: the replayed batch's new rows in new files, the old ones deleted by position delete files,
    every data file's rows a delivery. Copy-on-write: the rows a MERGE copied are no deliveries, and an update to
    the values a row had looks like a copy: observed in part."""
    raw = yaml.safe_load((EXAMPLE / f"{scenario}.yaml").read_text())
    run_dir = tmp_path / "run"
    summary = run_scenario(parse_scenario(raw, EXAMPLE), run_dir, console=Console(quiet=True))
    assert summary.status == "complete" and not summary.failed_streamlets, why(summary)
    report = check_run(run_dir)
    table = run_dir / "work" / "lake" / "table" / "sales" / "orders"
    live = _live(table)
    rows, sent = _rows(table, live), acked(run_dir)
    counts = next(h for h in report[HOP_FINDINGS] if h.name == "lake").counts
    assert counts.lost == len(sent - set(rows)) == 0 and max(rows.values()) == 1 and counts.duplicated_in_state == 0
    assert counts.phantom == len(set(rows) - sent) == 0 and len(_kills(run_dir, "orders")) == 2
    exported = next(e for e in history(run_dir) if e["event"] == "output_exported")
    written = [p for p in (table / "data").rglob("*.parquet") if not p.name.endswith("-deletes.parquet")]
    every = _ids(written)  # every data file's rows
    if scenario == "merge":
        assert exported["observed"] == "fully" and exported["deleted_rows"] == sum(map(len, live.values())) > 0
        assert counts.duplicated_deliveries == sum(1 for r, n in every.items() if n > 1 and r in sent) > 0
    else:
        assert exported["observed"] == "partly" and exported["copied_rows"] > 0 and exported["deleted_rows"] == 0
        assert counts.duplicated_deliveries <= sum(1 for r, n in every.items() if n > 1 and r in sent)
    assert report[VERDICT] == "effectively-exactly-once" and report.outcome == "pass", report[EXPECTATIONS]
