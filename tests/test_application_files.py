"""A team's own job writing a Delta Lake table (examples/orders-lake, unchanged), under SIGKILLs: Delta's streaming
sink skips a replayed batch, a plain foreachBatch append writes it again, a MERGE into a table with deletion vectors
absorbs it (Parquet: test_application_parquet.py). Each report's counts equal a count made here from the table's own
files, log and deletion vectors (read by this test's own code with pyarrow and pyroaring, not the harness's
delta-rs) and acks.csv."""

from __future__ import annotations

import io
import json
import re
from collections import Counter
from pathlib import Path

import pyarrow.dataset as ds
import pytest
import yaml

from harness.checker.check import check_run
from harness.checker.counts import COUNTS, VERDICT
from harness.checker.expect import EXPECTATIONS
from harness.evidence.history import PROCESS_EXITED, PROCESS_KILLED, PROCESS_STARTED
from harness.runner.console import Console
from harness.runner.run import run_scenario
from harness.scenario.parse import parse_scenario
from harness.world.namespaces import refusal
from tests.delta_vectors import deleted
from tests.evidence_helpers import acked, why
from tests.test_faults import ROOT, history

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]
EXAMPLE = ROOT / "examples" / "orders-lake"


def _run(tmp_path, scenario: str, faults: int | None = None, console: Console | None = None):
    """The example's scenario run and checked; `faults`: only its first ones played."""
    raw = yaml.safe_load((EXAMPLE / f"{scenario}.yaml").read_text())
    raw["faults"] = raw.get("faults", [])[:faults]
    run_dir = tmp_path / scenario
    summary = run_scenario(parse_scenario(raw, EXAMPLE), run_dir, console=console or Console(quiet=True))
    assert summary.status == "complete" and not summary.failed_streamlets, why(summary)
    return run_dir, check_run(run_dir)


def _ids(table: Path, files: dict[str, set[int]]) -> Counter:
    """(key, seq) of the rows of these data files (their order_id "key-seq"; a file's path in the table -> the
    positions of its rows deleted)."""
    found = Counter()
    for name, gone in files.items():
        ids = ds.dataset(str(table / name), format="parquet").to_table(columns=["order_id"]).column(0).to_pylist()
        found.update((k, int(s)) for i, (k, _, s) in enumerate(x.rpartition("-") for x in ids) if i not in gone)
    return found


def _delta_state(table: Path) -> dict[str, set[int]]:
    """The data files the Delta log has live, each with the rows its deletion vector marks deleted: its JSON
    commits replayed, a file known by its path and its vector."""
    live: dict[tuple[str, str], set[int]] = {}
    for commit in sorted((table / "_delta_log").glob("*.json")):
        for line in filter(None, commit.read_text().splitlines()):
            action = json.loads(line)
            for verb in ("add", "remove"):
                if verb in action:
                    dv = action[verb].get("deletionVector")
                    key = (action[verb]["path"], json.dumps(dv and [dv["storageType"], dv["pathOrInlineDv"]]))
                    if verb == "add":
                        live[key] = deleted(table, dv) if dv else set()
                    else:
                        live.pop(key, None)
    return {path: gone for (path, _), gone in live.items()}


def _sink_state(table: Path, named: Path | None = None) -> dict[str, set[int]]:
    """The data files Spark's file sink committed: every entry of its metadata log from the last compact file on
    (its paths as the job named the table: `named`, where it is not `table`)."""
    logs = [p for p in (table / "_spark_metadata").iterdir() if not p.name.startswith(".")]  # not the .crc files
    entries = sorted(logs, key=lambda p: int(p.name.split(".")[0]))
    start = max((i for i, p in enumerate(entries) if p.name.endswith(".compact")), default=0)
    listed = [json.loads(line) for p in entries[start:] for line in p.read_text().splitlines()[1:] if line]
    return {
        str(Path(e["path"].removeprefix("file:")).relative_to(named or table)): set()
        for e in listed
        if e["action"] == "add"
    }


def _readable(file: Path) -> bool:
    try:
        ds.dataset(str(file), format="parquet").schema
    except (OSError, ValueError):  # pyarrow's ArrowInvalid is a ValueError
        return False
    return True


def _rewrites(table: Path) -> set[str]:
    """The data files a compaction wrote: first added to the Delta log with dataChange false."""
    first: dict[str, bool] = {}
    for commit in sorted((table / "_delta_log").glob("*.json")):
        for action in map(json.loads, filter(None, commit.read_text().splitlines())):
            if "add" in action:
                first.setdefault(action["add"]["path"], action["add"]["dataChange"])
    return {path for path, changed in first.items() if not changed}


def _changes(table: Path) -> tuple[set[str], Counter]:
    """The data files Delta commits with a change data feed added, and the (key, seq) of the rows those commits
    inserted or updated, from their change files (read with pyarrow, their _change_type column)."""
    replaced, changed = set(), Counter()
    for commit in sorted((table / "_delta_log").glob("*.json")):
        actions = [json.loads(line) for line in filter(None, commit.read_text().splitlines())]
        files = [a["cdc"]["path"] for a in actions if "cdc" in a]
        if not files:
            continue
        replaced |= {a["add"]["path"] for a in actions if "add" in a}
        for name in files:
            rows = ds.dataset(str(table / name), format="parquet").to_table(["order_id", "_change_type"]).to_pylist()
            ids = (r["order_id"].rpartition("-") for r in rows if r["_change_type"] in ("insert", "update_postimage"))
            changed.update((k, int(s)) for k, _, s in ids)
    return replaced, changed


def _counted(
    run_dir: Path, report, state: dict[str, set[int]], table: Path | None = None, rewrites: set[str] = frozenset()
) -> tuple[Counter, Counter]:
    """The report's counts against the table's rows (state: its live files, less their deleted rows) and every
    data file's rows but a compaction's `rewrites` (deliveries), a MERGE's with a change data feed its inserts and
    updates; `table`: its folder, where it is not the output's own."""
    table = table or run_dir / "work" / "lake" / "table"
    replaced, changed = _changes(table) if (table / "_delta_log").is_dir() else (set(), Counter())
    written = [p for p in table.rglob("part-*.parquet") if not {"_delta_log", "_change_data"} & set(p.parts)]
    written = [p for p in written if str(p.relative_to(table)) not in rewrites]
    cut = [p for p in written if not _readable(p)]  # begun by a kill's driver, never finished
    rows = _ids(table, state)
    delivering = [p for p in written if p not in cut and str(p.relative_to(table)) not in replaced]
    deliveries = _ids(table, {str(p.relative_to(table)): set() for p in delivering}) + changed
    exported = next(e for e in history(run_dir) if e["event"] == "output_exported")
    assert sorted(exported.get("cut_files", [])) == sorted(p.name for p in cut)
    sent = acked(run_dir)
    assert report[COUNTS].lost == len(sent - set(rows)) == 0
    assert report[COUNTS].duplicated_in_state == sum(1 for r, n in rows.items() if n > 1 and r in sent)
    assert report[COUNTS].duplicated_deliveries == sum(1 for r, n in deliveries.items() if n > 1 and r in sent)
    assert report[COUNTS].phantom == len((set(rows) | set(deliveries)) - sent) == 0
    return rows, deliveries


def _kills(run_dir: Path) -> list[dict]:
    return [e for e in history(run_dir) if e["event"] == "fault_begun" and e["kind"] == "kill-driver"]


@pytest.mark.long  # make test-long: Delta's streaming sink under kills is in test_sinks.py's suite run already
def test_deltas_streaming_sink_skips_the_replayed_batch(tmp_path):
    run_dir, report = _run(tmp_path, "delta")
    _counted(run_dir, report, _delta_state(run_dir / "work" / "lake" / "table"))
    assert len(_kills(run_dir)) == 2 and report[COUNTS].duplicated_in_state == 0
    assert report[VERDICT] in ("exactly-once", "effectively-exactly-once") and report.outcome == "pass"
    exported = next(e for e in history(run_dir) if e["event"] == "output_exported")
    assert exported["format"] == "delta" and exported["observed"] == "fully" and exported["cut_files"] == []


@pytest.mark.long  # a job's file output in make test: the windowed Parquet one; Delta's sinks: test_sinks.py
def test_a_plain_foreach_batch_append_to_delta_appends_the_replayed_batch_again(tmp_path):
    run_dir, report = _run(tmp_path, "delta-append")
    rows, _ = _counted(run_dir, report, _delta_state(run_dir / "work" / "lake" / "table"))
    # The kill came after the table took the batch, before the checkpoint did: its rows are in the table twice.
    held = _kills(run_dir)[0]
    assert held["at"] == "in-flight" and "held_batch" in held, held
    assert report[COUNTS].duplicated_in_state > 0 and max(rows.values()) == 2
    assert report[VERDICT] == "at-least-once" and report.outcome == "pass", report[EXPECTATIONS]


@pytest.mark.long  # make test-long: beside the appends, a table compacted while the job streams
def test_a_table_compacted_while_streaming_holds_each_order_once_and_its_rewrites_deliver_nothing(tmp_path):
    run_dir, report = _run(tmp_path, "delta-optimize")
    table = run_dir / "work" / "lake" / "table"
    rewrites = _rewrites(table)
    rows, _ = _counted(run_dir, report, _delta_state(table), rewrites=rewrites)
    exported = next(e for e in history(run_dir) if e["event"] == "output_exported")
    assert rewrites and exported["rewritten_files"] == len(rewrites) and max(rows.values()) == 1
    assert len(_kills(run_dir)) == 2 and report.outcome == "pass", report[EXPECTATIONS]


@pytest.mark.long  # make test-long: beside the compaction, its replaced files vacuumed while the job streams
def test_files_vacuumed_while_streaming_are_named_and_the_output_observed_in_part(tmp_path):
    """VACUUM RETAIN 0 HOURS after each OPTIMIZE: files no version lists are deleted while the job streams, as the
    log's VACUUM END commits count them. Those the harness saw written are named at the export; the table's rows,
    counted from the log and the files left, hold each order once; the verdict claims no more than
    effectively-exactly-once."""
    run_dir, report = _run(tmp_path, "delta-vacuum")
    table = run_dir / "work" / "lake" / "table"
    rows = _ids(table, _delta_state(table))
    vacuumed = 0
    for commit in sorted((table / "_delta_log").glob("*.json")):
        for action in map(json.loads, filter(None, commit.read_text().splitlines())):
            if action.get("commitInfo", {}).get("operation") == "VACUUM END":
                vacuumed += int(action["commitInfo"]["operationMetrics"]["numDeletedFiles"])
    exported = next(e for e in history(run_dir) if e["event"] == "output_exported")
    assert 0 < len(exported["removed_files"]) <= vacuumed and exported["observed"] == "partly"
    assert not any((table / name).exists() for name in exported["removed_files"])
    sent = acked(run_dir)
    assert report[COUNTS].lost == len(sent - set(rows)) == 0 and max(rows.values()) == 1
    assert report[VERDICT] == "effectively-exactly-once" and report.outcome == "pass", report[EXPECTATIONS]


def _deleted_rows(table: Path) -> int:
    return sum(len(gone) for gone in _delta_state(table).values())


def test_a_merge_into_a_table_with_deletion_vectors_absorbs_the_replayed_batch(tmp_path):
    """MERGE marks the rows it updates deleted (a deletion vector) and writes their new versions: the table holds
    each order once, its replayed batch's orders delivered twice. The status lines count the table's rows."""
    shown = io.StringIO()
    run_dir, report = _run(tmp_path, "delta-merge", console=Console(shown, log_interval_s=2))
    table = run_dir / "work" / "lake" / "table"
    rows, deliveries = _counted(run_dir, report, _delta_state(table))
    assert _deleted_rows(table) > 0 and max(rows.values()) == 1 and report[COUNTS].duplicated_deliveries > 0
    assert len(_kills(run_dir)) == 2 and _kills(run_dir)[0].get("held_batch") is not None
    assert report[VERDICT] == "effectively-exactly-once" and report.outcome == "pass", report[EXPECTATIONS]
    exported = next(e for e in history(run_dir) if e["event"] == "output_exported")
    assert exported["deleted_rows"] == _deleted_rows(table) and exported["observed"] == "fully"
    counted = [int(m.replace(",", "")) for m in re.findall(r"delivered ([\d,]+)", shown.getvalue())]
    assert counted and 0 < max(counted) <= sum(deliveries.values()), shown.getvalue()


@pytest.mark.long  # make test-long: beside the merge into a table with deletion vectors in make test
def test_a_merge_copying_the_rows_of_the_files_it_rewrites_delivers_what_its_change_feed_lists(tmp_path):
    """Copy-on-write: each MERGE rewrites the files holding the orders it updates, their other orders copied. The
    deliveries are the inserts and updates each MERGE's change files list, not the copies."""
    run_dir, report = _run(tmp_path, "delta-merge-cow")
    table = run_dir / "work" / "lake" / "table"
    rows, deliveries = _counted(run_dir, report, _delta_state(table))
    replaced, changed = _changes(table)
    exported = next(e for e in history(run_dir) if e["event"] == "output_exported")
    assert replaced and exported["changed_rows"] == sum(changed.values()) and exported["observed"] == "fully"
    assert max(rows.values()) == 1 and report[COUNTS].duplicated_deliveries > 0 and len(_kills(run_dir)) == 2
    assert report[VERDICT] == "effectively-exactly-once" and report.outcome == "pass", report[EXPECTATIONS]


@pytest.mark.long  # make test-long: the same job appending, beside the merge in make test
def test_the_same_job_appending_into_a_table_with_deletion_vectors_keeps_the_copies(tmp_path):
    run_dir, report = _run(tmp_path, "delta-merge-append")
    rows, _ = _counted(run_dir, report, _delta_state(run_dir / "work" / "lake" / "table"))
    assert report[COUNTS].duplicated_in_state > 0 and max(rows.values()) >= 2
    assert report[VERDICT] == "at-least-once" and report.outcome == "pass", report[EXPECTATIONS]


@pytest.mark.long  # make test-long: the Parquet sink under kills is in test_sinks.py's suite run; these add formats
@pytest.mark.parametrize("scenario", ["confluent", "delimited", "log-lines", "json-string", "cloudevents"])
def test_orders_framed_as_lines_as_json_in_a_string_or_as_cloudevents_are_each_in_the_table_once(tmp_path, scenario):
    run_dir, report = _run(tmp_path, scenario)
    assert len(_kills(run_dir)) == 2 and report.outcome == "pass", report[EXPECTATIONS]
    _counted(run_dir, report, _sink_state(run_dir / "work" / "lake" / "table"))


@pytest.mark.long  # make test-long: beside the job cutting the header with its local schema
@pytest.mark.parametrize("scenario", ["registry", "registry-by-name"])  # given its URL; naming it, in its world
def test_a_job_looking_its_schema_up_in_the_runs_registry_at_each_start_reads_each_order_once(tmp_path, scenario):
    if scenario == "registry-by-name" and refusal():
        pytest.skip(f"a world needs Linux namespaces: {refusal()}")
    run_dir, report = _run(tmp_path, scenario)
    assert len(_kills(run_dir)) == 2 and report.outcome == "pass", report[EXPECTATIONS]
    _counted(run_dir, report, _sink_state(run_dir / "work" / "lake" / "table"))
    starts = [e for e in history(run_dir) if e["event"] == PROCESS_STARTED and e.get("streamlet") == "orders"]
    asked = [json.loads(line) for line in (run_dir / "registry.jsonl").read_text().splitlines()]
    assert len(starts) == 3 and [(a["path"], a["status"]) for a in asked] == [
        ("/subjects/orders-value/versions/latest", 200)
    ] * len(starts)


@pytest.mark.long  # make test-long: a job that ends after each run, on a schedule
def test_a_job_run_on_a_schedule_starts_again_after_each_run_and_its_killed_run_is_resumed(tmp_path):
    run_dir, report = _run(tmp_path, "scheduled")
    assert report.outcome == "pass" and report[VERDICT] == "exactly-once", report[EXPECTATIONS]
    _counted(run_dir, report, _sink_state(run_dir / "work" / "lake" / "table"))
    events = [e for e in history(run_dir) if e.get("process") == "streamlet-orders"]
    starts = [e["ts_ms"] for e in events if e["event"] == PROCESS_STARTED]
    ended = {e["pid"]: e["ts_ms"] for e in events if e["event"] == PROCESS_EXITED}
    killed = [e for e in events if e["event"] == PROCESS_KILLED]
    assert len(killed) == 1 and _kills(run_dir)[0]["held_batch"] is not None  # a run killed with its batch in flight
    assert len(ended) >= 2 and all(e["exit_code"] == 0 for e in events if e["event"] == PROCESS_EXITED)
    assert json.loads((run_dir / "run.json").read_text())["failed_streamlets"] == {}  # a run's end is no failure
    pids = [e["pid"] for e in events if e["event"] == PROCESS_STARTED]
    for before, (pid, start) in zip(zip(pids, starts), list(zip(pids, starts))[1:]):
        if before[0] in ended:  # after a run that ended: every 15 s from its start, or at once if it took longer
            assert start - before[1] >= 15_000 - 500 or start - ended[before[0]] <= 2_000, (before, pid, start)


@pytest.mark.long  # make test-long: a table named in the job's catalog, not by a path
def test_a_table_the_job_names_in_its_catalog_is_found_in_its_warehouse_and_holds_each_order_once(tmp_path):
    run_dir, report = _run(tmp_path, "catalog-table")
    table = run_dir / "work" / "orders" / "spark-warehouse" / "shop.db" / "orders"  # where Spark put it
    assert len(_kills(run_dir)) == 2 and report.outcome == "pass", report[EXPECTATIONS]
    rows, _ = _counted(run_dir, report, _sink_state(table), table)
    assert max(rows.values()) == 1 and report[COUNTS].duplicated_deliveries > 0
