"""Damaged evidence and the check/report commands: a clear error naming the file, or a partial report
that says what is missing; never a traceback. Reports: JSON schema, Markdown, HTML, JUnit, index."""

from __future__ import annotations

import json
import sqlite3
import xml.etree.ElementTree as ET

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contract.applications import UNREAD
from harness.checker.anomaly_records import RECORDS
from harness.checker.causes import key_homes
from harness.checker.check import check_run, judged_from_notable
from harness.checker.counts import CAUSES, COUNTS, VERDICT
from harness.checker.egress_readers import SQLITE_BATCH_ROWS, egress_blocks
from harness.checker.expect import EXPECTATIONS
from harness.checker.faults import fault_spans
from harness.checker.hops import hop_data
from harness.checker.load import load_evidence
from harness.checker.record_ids import rids
from harness.checker.selection import Selection
from harness.checker.summary import identities
from harness.checker.summary.engines import engine
from harness.errors import HarnessError
from harness.evidence.compact import compact_run
from tests.conftest import run_harness
from tests.synthetic_run import Flow, clean_flow, make_sent, write_run
from tests.test_bad_input import assert_one_line_error

EXPECT = {"end_to_end": "exactly-once", "max_lost": 0, "per_hop": {"processed": "exactly-once"}}


def _run(tmp_path, flow=None, **kwargs):
    sent = make_sent(3, 20)
    return write_run(tmp_path / "run", sent, flow or clean_flow(sent), expectations=EXPECT, **kwargs), sent


def test_missing_run_directory_and_ack_log_are_one_line_errors(tmp_path):
    assert_one_line_error(run_harness("check", str(tmp_path / "nope")), "nope: no such run directory")
    root, _ = _run(tmp_path)
    (root / "acks.csv").unlink()
    assert_one_line_error(run_harness("check", str(root)), "acks.csv: missing")
    (root / "acks.csv").write_bytes(b"\x00\x01garbage\n\xff")
    assert_one_line_error(run_harness("report", str(root)), "acks.csv")
    root, _ = _run(tmp_path / "again")
    (root / "pipeline.json").write_text("{trunc")
    assert_one_line_error(run_harness("check", str(root)), "pipeline.json: unreadable")
    (root / "pipeline.json").unlink()
    assert_one_line_error(run_harness("check", str(root)), "pipeline.json: missing")


def test_damaged_files_give_a_partial_report_naming_them(tmp_path):
    root, _ = _run(tmp_path)
    with open(root / "history.jsonl", "a") as history:
        history.write('{"ts_ms": 1, "event": "fault_begun", "kind": "kill-dr')  # cut off mid-line
    (root / "topics" / "ingested.jsonl").unlink()
    (root / "egress" / "egress.sqlite").write_bytes(b"this is not a database" * 100)
    result = run_harness("report", str(root))
    # the end-to-end expectation cannot be measured without the egress: unknown
    assert result.returncode == 3, result.stderr
    assert "Traceback" not in result.stderr
    report = json.loads((root / "report.json").read_text())
    assert report["partial"] is True
    gaps = "\n".join(report["gaps"])
    assert "history.jsonl: last line cut mid-record" in gaps
    assert "topics/ingested.jsonl: missing" in gaps
    assert "egress/egress.sqlite: unreadable" in gaps
    assert report["verdict"]["end_to_end"] == "unknown" and report["outcome"] == "unknown"
    assert report["counts"]["lost"] is None and report["counts"]["acked"] == 60
    assert {e["name"]: e["status"] for e in report["expectations"]} == {
        "end_to_end": "unknown",
        "per_hop.processed": "pass",
        "max_lost": "unknown",
    }
    assert not any(e["passed"] for e in report["expectations"] if e["status"] == "unknown")
    assert "partial: topics/ingested.jsonl: missing" in result.stdout
    assert "Partial report" in (root / "report.html").read_text()


def test_check_writes_nothing_and_report_writes_every_format(tmp_path):
    sent = make_sent(3, 20)
    every = np.arange(len(sent))
    # the processor replayed 5 records (a topic keeps both: at-least-once there); upsert absorbs them
    twice = np.concatenate([every, every[:5]])
    root = write_run(
        tmp_path / "runs" / "dup",
        sent,
        Flow({"ingested": every, "processed": twice}, twice, every),
        expectations=EXPECT,
    )
    before = set(p.name for p in root.iterdir())
    result = run_harness("check", str(root))
    assert result.returncode == 1 and "verdict: effectively-exactly-once" in result.stdout
    assert "FAIL     end_to_end" in result.stdout and "FAIL     per_hop.processed" in result.stdout
    assert set(p.name for p in root.iterdir()) == before
    result = run_harness("report", str(root))
    assert result.returncode == 1
    report = json.loads((root / "report.json").read_text())
    assert report["schema_version"] == 6
    assert report["counts"]["duplicated_deliveries"] == 5 and report["counts"]["duplicated_in_state"] == 0
    assert report["verdict"]["hops"] == {
        "ingested": "exactly-once",
        "processed": "at-least-once",
        "egress": "effectively-exactly-once",
    }
    assert {e["name"]: e["passed"] for e in report["expectations"]} == {
        "end_to_end": False,
        "per_hop.processed": False,
        "max_lost": True,
    }
    for key in ("retention", "watermark", "unexplained"):
        assert report["causes"]["lost"][key] == 0
    suite = ET.parse(root / "junit.xml").getroot().find("testsuite")
    assert suite.get("tests") == "3" and suite.get("failures") == "2"
    assert [c.get("name") for c in suite.findall("testcase")] == ["end_to_end", "per_hop.processed", "max_lost"]
    markdown = (root / "report.md").read_text()
    assert (
        markdown.startswith("# synthetic: FAIL (effectively-exactly-once)") and "| **FAIL** | end_to_end |" in markdown
    )
    html = (root / "report.html").read_text()
    # The badge is the outcome, red for a FAIL; the guarantee beside it is neutral, however strong it is.
    assert "style='background:#d62728'>FAIL</span>" in html
    assert (
        "verdict: <span class='guarantee'>effectively-exactly-once</span>" in html
        and "#2ca02c'>effectively" not in html
    )
    # The hop table at a glance: verdicts and counts; where anomalies appear and the copies folded beneath.
    assert "| hop | verdict | acked | unknown | lost | dropped | duplicated_deliveries |" in markdown
    assert "\nwhere each anomaly first appears, and the extra copies per hop\n\n| hop | lost first here |" in markdown
    assert "<details><summary>where each anomaly first appears, and the extra copies per hop</summary>" in html
    assert "\n- **phantom**: a record at a hop that the source never sent\n" in markdown  # the report's words
    # Each part titled once: report.md and report.html lay out the same parts in the same order.
    titles = [line[3:] for line in markdown.splitlines() if line.startswith("## ")]
    assert titles[:3] == ["Expectations", "Counts per hop", "Causes"] and titles[-1] == "Words used in this report"
    at = [max(html.find(f"<h2>{t}</h2>"), html.find(f"<summary>{t}</summary>")) for t in titles]
    assert -1 not in at and at == sorted(at)
    assert "<summary>Words used in this report</summary>" in html
    assert html.count("<svg") >= 2  # plots inline; nothing fetched from anywhere:
    assert "src=" not in html and "<link" not in html and "url(http" not in html
    index = (tmp_path / "runs" / "index.html").read_text()
    assert "dup/report.html" in index and "effectively-exactly-once" in index


def _sql(root, *statements):
    import sqlite3

    with sqlite3.connect(root / "egress" / "egress.sqlite") as db:
        for statement, *args in statements:
            db.execute(statement, *args)


def _report(root):
    return json.loads((root / "report.json").read_text())


def _ack_lines(root) -> list[str]:
    """The ack log's lines as the generator writes them (no quotes)."""
    return (root / "acks.csv").read_text().replace('"', "").splitlines(keepends=True)


def test_a_torn_last_line_is_dropped_and_damage_in_the_middle_is_named(tmp_path):
    root, _ = _run(tmp_path)
    lines = _ack_lines(root)
    lines[10] = "k0001,oops\n"  # a damaged line in the middle (2 columns)
    # and a last line cut mid-record (what SIGKILL leaves)
    (root / "acks.csv").write_text("".join(lines) + "k0002,61,17")
    with open(root / "topics" / "processed.jsonl", "a") as dump:
        dump.write('{"partition": 0, "offset": 99, "timesta')
    with open(root / "progress" / "egress.jsonl", "a") as progress:
        progress.write('{"event": "progr')
    result = run_harness("report", str(root))
    assert "Traceback" not in result.stderr and result.returncode in (0, 1, 3), result.stderr
    report = _report(root)
    gaps = "\n".join(report["gaps"])
    assert "acks.csv: last line cut mid-record" in gaps
    assert "acks.csv: 1 damaged line(s) skipped (line 11" in gaps
    assert "topics/processed.jsonl: last line cut mid-record" in gaps
    assert "progress/egress.jsonl: last line cut mid-record" in gaps
    # The damaged line's record is not among the acknowledged ones: it arrives as one record the log does not name.
    assert report["counts"]["acked"] == 59 and report["counts"]["phantom"] == 1


def test_type_damage_in_the_ack_log_names_the_line(tmp_path):
    root, _ = _run(tmp_path)
    text = "".join(_ack_lines(root)).replace("\nk0000,3,", "\nk0000,3,notatime", 1)
    (root / "acks.csv").write_text(text)
    assert run_harness("report", str(root)).returncode == 0
    assert any(
        "acks.csv: 1 damaged line(s) skipped (line " in g and "(event_time_ms)" in g for g in _report(root)["gaps"]
    )


def test_a_record_with_two_ack_lines_counts_once_and_can_be_a_witness(tmp_path):
    """acked twice, and acked then unknown: one record each; as witnesses (lost here) they do not crash the check."""
    root, _ = _run(tmp_path)
    lines = _ack_lines(root)
    twice, acked_then_unknown = lines[1], lines[2]
    key, seq = acked_then_unknown.split(",")[:2]
    unknown = ",".join(acked_then_unknown.split(",")[:4] + ["unknown", "", ""]) + "\n"
    (root / "acks.csv").write_text("".join(lines) + twice + unknown)
    _sql(
        root,
        ("DELETE FROM records WHERE key = ? AND seq = ?", (key, int(seq))),
        ("DELETE FROM records WHERE key = ? AND seq = ?", tuple(twice.split(",")[:1]) + (int(twice.split(",")[1]),)),
    )
    result = run_harness("report", str(root))
    assert "Traceback" not in result.stderr and result.returncode == 1, result.stderr
    report = _report(root)
    assert report["counts"]["acked"] == 60 and report["counts"]["unknown"] == 0 and report["counts"]["lost"] == 2
    assert {(w["key"], w["seq"]) for w in report["witnesses"] if w["anomaly"] == "lost"} == {
        (key, int(seq)),
        (twice.split(",")[0], int(twice.split(",")[1])),
    }
    assert any("2 record(s) have more than one line" in g for g in report["gaps"])
    lost = (root / "anomalies" / "lost.csv").read_text().splitlines()
    assert lost[0] == "key,seq,source_partition,source_offset,first_hop,cause" and len(lost) == 3
    assert (root / "anomalies" / "lost-ranges.csv").read_text().startswith("key,cause,first_seq,last_seq,records\n")


def test_phantoms_of_any_seq_are_phantoms_never_another_record(tmp_path):
    """A seq beyond 2**40, negative, beyond int64 (SQLite stores it as a real), fractional, text or missing:
    each its own phantom, shown as written; none aliases k0000's records (before, k0001 + 2**40 packed onto k0002)."""
    root, _ = _run(tmp_path)
    odd = [
        ("k0001", 2**40),
        ("k0001", -5),
        ("k0001", 1.5),
        ("k0001", "seven"),
        ("k0001", None),
        ("nokey", 3),
        (None, 4),
    ]
    # beyond int64: SQLite keeps a real
    _sql(
        root,
        *[("INSERT INTO records (key, seq, batch_id) VALUES (?, ?, 0)", (k, s)) for k, s in odd],
        (f"INSERT INTO records (key, seq, batch_id) VALUES ('k0001', {2**70}, 0)",),
    )
    odd.append(("k0001", 2**70))
    result = run_harness("report", str(root))
    assert "Traceback" not in result.stderr and result.returncode == 1, result.stderr
    report = _report(root)
    assert report["counts"]["phantom"] == len(odd) and report["counts"]["duplicated_in_state"] == 0
    assert report["counts"]["lost"] == 0 and report["verdict"]["end_to_end"] == "none"
    shown = {(w["key"], w["seq"]) for w in report["witnesses"] if w["anomaly"] == "phantom"}
    # 5 of 8 witnesses, as written
    assert (
        shown
        <= {
            ("k0001", 2**40),
            ("k0001", -5),
            ("k0001", "1.5"),
            ("k0001", "seven"),
            ("k0001", None),
            ("nokey", 3),
            (None, 4),
            ("k0001", "1.1805916207174113e+21"),
        }
        and len(shown) == 5
    )
    assert report["witness_totals"]["phantom"] == 8 and "| phantom | 5 of 8 |" in (root / "report.md").read_text()
    phantoms = (root / "anomalies" / "phantom.csv").read_text().splitlines()
    assert phantoms[0] == "key,seq" and len(phantoms) == 9 and "k0001,seven" in phantoms and "k0001,-5" in phantoms


def test_what_could_not_be_measured_is_unknown_never_pass(tmp_path):
    history = [
        {
            "ts_ms": 1_800_000_000_000,
            "event": "fault_begun",
            "kind": "kill-driver",
            "target": "processor",
            "signal": "SIGKILL",
            "scope": "streamlet",
            "restarts": True,
            "recovers": True,
        },
        {
            "ts_ms": 1_800_000_000_500,
            "event": "process_started",
            "streamlet": "processor",
            "process": "streamlet-processor",
        },
        {
            "ts_ms": 1_800_000_001_000,
            "event": "fault_ended",
            "kind": "kill-driver",
            "target": "processor",
            "restarted": True,
        },
    ]
    sent = make_sent(3, 20)
    root = write_run(
        tmp_path / "run",
        sent,
        clean_flow(sent),
        history=history,
        expectations={"max_recovery_s": 60, "max_lost": 0, "query_failure": "none"},
    )
    for path in (root / "progress").iterdir():
        path.unlink()
    result = run_harness("check", str(root))
    assert result.returncode == 3, result.stdout
    assert (
        "UNKNOWN  max_recovery_s: recovery unknown: kill-driver processor: recovery unknown: progress of processor "
        "missing" in result.stdout
    )
    assert "pass     max_lost" in result.stdout
    assert run_harness("check", str(root), "--allow-unknown").returncode == 0
    (root / "history.jsonl").unlink()
    assert (
        "UNKNOWN  query_failure: query failures: unknown (history.jsonl missing)"
        in run_harness("check", str(root)).stdout
    )
    run_harness("report", str(root))
    suite = ET.parse(root / "junit.xml").getroot().find("testsuite")
    errors = {c.get("name"): c.find("error") for c in suite.findall("testcase")}
    assert suite.get("errors") == "2" and suite.get("failures") == "0" and suite.get("time") and suite.get("timestamp")
    assert errors["max_recovery_s"] is not None and str(root / "report.html") in errors["max_recovery_s"].text
    assert "UNKNOWN" in (root / "report.html").read_text()


def test_an_output_its_reader_cannot_read_is_unknown_naming_why(tmp_path):
    """An export that met a table feature its reader does not implement wrote nothing and said why: the verdict
    is unknown, never a count made without the feature, and the gap names it."""
    why = "its table uses the Delta reader feature(s) columnMapping, which are not read here"
    exported = {"ts_ms": 1_800_000_000_000, "event": "output_exported", "output": "egress", "observed": UNREAD}
    root, _ = _run(tmp_path, history=[exported | {"unobserved": why}])
    (root / "egress" / "egress.sqlite").unlink()  # the export wrote nothing
    report = check_run(root)
    assert report[VERDICT] == "unknown" and report.outcome == "unknown", report[VERDICT]
    assert report[COUNTS].lost is None and report[COUNTS].duplicated_in_state is None
    assert any(gap.startswith(f"output egress: not read: {why}") for gap in report.gaps), report.gaps


def test_a_run_without_run_json_is_unfinished_not_lossy(tmp_path):
    """What a run in progress (or killed) has not delivered yet is not lost: the report says why it is partial,
    first."""
    sent = make_sent(3, 20)
    every = np.arange(len(sent))
    half = every[: len(every) // 2]
    root = write_run(
        tmp_path / "run",
        sent,
        Flow({"ingested": every, "processed": half}, half, half),
        expectations={"end_to_end": "exactly-once", "max_lost": 0},
    )
    (root / "run.json").unlink()
    result = run_harness("check", str(root))
    assert result.returncode == 3, result.stdout
    assert result.stdout.splitlines()[1].startswith("partial: run.json missing: the run did not finish")
    assert "at-most-once" not in result.stdout and "verdict: unknown" in result.stdout
    assert "UNKNOWN  max_lost: records lost: unknown (run.json missing" in result.stdout


JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False), st.text(max_size=6)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
            st.sampled_from(
                [
                    "inputs",
                    "outputs",
                    "source_topic",
                    "settings",
                    "status",
                    "seed",
                    "schedule",
                    "kind",
                    "mode",
                    "streamlets",
                    "role",
                    "name",
                    "expectations",
                ]
            ),
            inner,
            max_size=4,
        ),
    ),
    max_leaves=12,
)
SMALL_FILES = ["pipeline.json", "scenario.json", "run.json", "versions.json"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(SMALL_FILES), JSON_VALUES)
def test_any_json_in_a_small_evidence_file_is_a_report_or_one_line_error(tmp_path, name, value):
    """Nothing in the evidence can make the checker crash or judge wrongly: a file holding any JSON value gives the
    clean run's pass, a partial report saying what it could not read, or a one-line error naming the file."""
    root = tmp_path / "run"
    if not root.exists():
        sent = make_sent(2, 5)
        write_run(root, sent, clean_flow(sent), expectations=EXPECT)
        (root / "versions.json").write_text(json.dumps({"pyspark": "4.0.0"}))
    original = (root / name).read_text()
    (root / name).write_text(json.dumps(value))
    try:
        report = check_run(root)
        # the garbage is harmless (the clean run's pass), or the report names what it could not read (a gap), or
        # takes the run as one that did not finish: never a failure of the pipeline
        assert report.outcome == "pass" or report.gaps or report.unfinished, (name, value, report[EXPECTATIONS])
    except HarnessError as exc:
        assert "\n" not in str(exc) and name in str(exc), (name, str(exc))
    finally:
        (root / name).write_text(original)


def test_a_run_with_nothing_acknowledged_is_unknown_not_exactly_once(tmp_path):
    sent = make_sent(2, 0)
    report = check_run(write_run(tmp_path / "run", sent, clean_flow(sent), expectations=EXPECT))
    assert report[COUNTS].acked == 0 and report[VERDICT] == "unknown" and report.outcome == "unknown"
    assert any("no record was acknowledged" in gap for gap in report.gaps)
    refused = run_harness("run", "scenarios/smoke.yaml", "--duration", "0", "--out", str(tmp_path / "never"))
    assert refused.returncode == 2 and "--duration" in refused.stderr and not (tmp_path / "never").exists()


def _batch(ts: int, topic: str, end: int) -> dict:
    """A streamlet's progress event: a batch committed at `ts` that read `topic` up to `end` in both partitions."""
    return {
        "ts_ms": ts,
        "event": "progress",
        "query": "main",
        "progress": {"batchId": 0, "numInputRows": 1, "sources": [{"endOffset": {topic: {"0": end, "1": end}}}]},
    }


def test_routine_retention_explains_only_what_it_deleted_before_the_streamlet_read_it(tmp_path):
    """No fault shrank anything: the processor fell behind and retention deleted part of its input. Lost records
    it never read and that fell below the log start with no sample showing them retained after its batches got
    there are retention; lost records a sample showed retained after its batches had read past them, or that
    never fell below the log start, stay unexplained."""
    sent = make_sent(4, 25)
    every = np.arange(len(sent))
    partition = sent.key % 2
    offset = np.zeros(len(sent), dtype=np.int64)  # each record's offset in `ingested` (every record, in order)
    for p in (0, 1):
        offset[partition == p] = np.arange((partition == p).sum())
    deleted_unread = (partition == 0) & (offset >= 10) & (offset < 20)
    read_then_lost = (partition == 0) & (offset < 5)
    never_deleted = (partition == 0) & (offset >= 30) & (offset < 35)
    keep = every[~(deleted_unread | read_then_lost | never_deleted)]
    t0 = 1_800_000_000_000

    # Sampled as the runner does, through the run: still retained at 2 s (after the batch that read to 10), gone at 5 s.
    history = [
        {"ts_ms": t0 + 2000, "event": "offsets", "partitions": [["ingested", 0, 0, 30], ["ingested", 1, 0, 30]]},
        {"ts_ms": t0 + 5000, "event": "offsets", "partitions": [["ingested", 0, 20, 50], ["ingested", 1, 0, 50]]},
    ]
    root = write_run(
        tmp_path / "run",
        sent,
        Flow({"ingested": every, "processed": keep}, keep, keep),
        history=history,
        progress={"processor": [_batch(t0 + 1000, "ingested", 10), _batch(t0 + 9000, "ingested", 50)]},
    )
    report = check_run(root)
    assert report[COUNTS].lost == 20
    assert report[CAUSES]["lost"]["retention"] == int(deleted_unread.sum()) == 10
    assert report[CAUSES]["lost"]["unexplained"] == 10


def test_lost_records_retention_deleted_before_the_recording_saw_them_are_placed_by_their_neighbours(
    tmp_path, monkeypatch
):
    """The processor is stopped and its input's retention shrunk; the run's recording of `ingested` stalled (a broker
    fault) and retention deleted offsets 10 and 11 of partition 0 (all it deleted there) before it saw them. Those
    lost records are placed in the deleted range by the records written before and after them: retention's. A record
    missing from an offset the recording did see (partition 1, offset 40) stays unexplained, as does one the ingress
    never wrote (partition 0, offset 14: placed by its neighbours 13 and 15, outside the range). Compacted, the run is
    judged by default from its notable records and those placing them, named by the dense engine a few lines at a
    time, as the whole evidence judges it; the records named do not depend on how the log is cut into batches."""
    sent = make_sent(8, 13)  # four keys a partition: a key's records in the range have no neighbour of their own key
    every = np.arange(len(sent))
    partition = sent.key % 2
    offset = np.zeros(len(sent), dtype=np.int64)  # each record's offset in `ingested` (every record, in order)
    for p in (0, 1):
        offset[partition == p] = np.arange((partition == p).sum())
    unrecorded = (partition == 0) & (offset >= 10) & (offset < 12)
    in_window = unrecorded | ((partition == 1) & (offset >= 5) & (offset < 25))
    never_written = (partition == 1) & (offset == 40)
    never_ingested = (partition == 0) & (offset == 14)
    processed = every[~(in_window | never_written | never_ingested)]
    history = [
        {
            "ts_ms": 1,
            "event": "consumer_position",
            "streamlet": "processor",
            "partitions": [["ingested", 0, 10], ["ingested", 1, 5]],
        },
        {
            "ts_ms": 2,
            "event": "log_start_observed",
            "streamlet": "processor",
            "partitions": [["ingested", 0, 12], ["ingested", 1, 25]],
        },
        {
            "ts_ms": 3,
            "event": "topics_recorded",
            "topics": ["ingested", "processed"],
            "missed": [["ingested", 0, 10, 12]],
        },
    ]
    root = write_run(
        tmp_path / "run", sent, Flow({"ingested": every, "processed": processed}, processed, processed), history=history
    )
    dump = root / "topics" / "ingested.jsonl"
    lines = dump.read_text().splitlines(keepends=True)
    dump.write_text("".join(line for line, gone in zip(lines, unrecorded | never_written | never_ingested) if not gone))
    report = check_run(root)
    assert report[COUNTS].lost == int((in_window | never_written | never_ingested).sum()) == 24
    assert report[CAUSES]["lost"]["retention"] == 22 and report[CAUSES]["lost"]["unexplained"] == 2
    lost = report[RECORDS]["lost"]
    assert set(lost[lost.cause == "unexplained"].seq) == set(sent.seq[never_written | never_ingested])
    assert any("offsets 10 to 11 of partition 0 were deleted by retention" in g for g in report.gaps)
    compact_run(root)
    monkeypatch.setattr(identities, "BATCH_ROWS", 4)  # the log's lines 20 and 24 (offsets 10 and 12) begin batches
    assert judged_from_notable(load_evidence(root, Selection.nothing()), complete=True)
    whole = check_run(root, engine=None).to_dict()
    assert whole["causes"] == report.to_dict()["causes"]
    assert json.dumps(check_run(root, strict=True).to_dict(), default=str) == json.dumps(whole, default=str)
    evidence = load_evidence(root)
    hops, spans = hop_data(evidence), fault_spans(evidence.history)
    named = engine("dense")(evidence, hops, spans)[1].notable
    monkeypatch.setattr(identities, "BATCH_ROWS", 1 << 19)
    assert named.tolist() == engine("dense")(evidence, hops, spans)[1].notable.tolist()


def test_a_record_acknowledged_without_an_offset_is_never_placed_below_a_log_start(tmp_path):
    """librdkafka can report a record delivered without its offset (acks.csv leaves it empty). Lost at the ingress
    while retention deleted part of the source, it cannot be shown among the deleted offsets: unexplained, with a gap
    saying why and no source offset in the lost set, where the records retention deleted before the ingress read
    them are retention's."""
    sent = make_sent(4, 25)
    every = np.arange(len(sent))
    deleted_unread = (sent.partition == 0) & (sent.offset >= 10) & (sent.offset < 20)
    placeless = (sent.partition == 1) & (sent.offset == 3)
    sent.offset[placeless] = -1
    keep = every[~(deleted_unread | placeless)]
    t0 = 1_800_000_000_000

    history = [
        {"ts_ms": t0 + 2000, "event": "offsets", "partitions": [["source", 0, 0, 30], ["source", 1, 0, 30]]},
        {"ts_ms": t0 + 5000, "event": "offsets", "partitions": [["source", 0, 20, 50], ["source", 1, 0, 50]]},
    ]
    root = write_run(
        tmp_path / "run",
        sent,
        Flow({"ingested": keep, "processed": keep}, keep, keep),
        history=history,
        progress={"ingress": [_batch(t0 + 1000, "source", 10), _batch(t0 + 9000, "source", 50)]},
    )
    assert '"acked",1,\n' in (root / "acks.csv").read_text()  # empty, as the generator writes a missing offset
    report = check_run(root)
    assert report[COUNTS].lost == 11
    assert report[CAUSES]["lost"]["retention"] == int(deleted_unread.sum()) == 10
    assert report[CAUSES]["lost"]["unexplained"] == 1
    assert any(g.startswith("acks.csv: 1 record(s) acknowledged without an offset") for g in report.gaps), report.gaps
    lost = report[RECORDS]["lost"]
    assert lost.source_offset.isna().sum() == 1 and lost[lost.source_offset.isna()].cause.tolist() == ["unexplained"]


def test_an_egress_killed_between_receiving_and_storing_loses_to_retention_only_what_its_replay_could_not_read(
    tmp_path,
):
    """The egress audits a batch before it stores it. Killed in between, its replay of that batch finds the records
    deleted by retention: lost to retention although received. A record received by a batch that committed and
    then missing from the store is not retention's (the sink lost it), nor, without the kill, one deleted while
    its batch ran, nor one received by a driver that never came back."""
    sent = make_sent(4, 25)
    every = np.arange(len(sent))
    partition, offset = sent.key % 2, sent.offset  # every record is in `processed` at its source offset
    committed_not_stored = (partition == 0) & (offset < 5)
    received_by_killed = (partition == 0) & (offset >= 10) & (offset < 20)
    never_received = (partition == 0) & (offset >= 20) & (offset < 25)
    lost = committed_not_stored | received_by_killed | never_received
    t0 = 1_800_000_000_000  # receipts (the audit's received_ms) are about t0 + 0.5 to 1 s

    samples = [
        {"ts_ms": t0 + 2500, "event": "offsets", "partitions": [["processed", 0, 0, 50], ["processed", 1, 0, 50]]},
        {"ts_ms": t0 + 5000, "event": "offsets", "partitions": [["processed", 0, 30, 50], ["processed", 1, 0, 50]]},
    ]
    killed = {
        "ts_ms": t0 + 3000,
        "event": "process_killed",
        "process": "streamlet-egress",
        "pid": 1,
        "signal": "SIGKILL",
    }
    flow = Flow({"ingested": every, "processed": every}, every[~never_received], every[~lost])
    progress = {"egress": [_batch(t0 + 2000, "processed", 10), _batch(t0 + 9000, "processed", 50)]}
    with_kill = check_run(write_run(tmp_path / "killed", sent, flow, history=samples + [killed], progress=progress))
    without = check_run(write_run(tmp_path / "not-killed", sent, flow, history=samples, progress=progress))
    assert with_kill[COUNTS].lost == without[COUNTS].lost == int(lost.sum()) == 20
    assert with_kill[CAUSES]["lost"]["retention"] == int((received_by_killed | never_received).sum()) == 15
    assert with_kill[CAUSES]["lost"]["unexplained"] == int(committed_not_stored.sum()) == 5
    assert without[CAUSES]["lost"]["retention"] == int(never_received.sum()) == 5
    assert without[CAUSES]["lost"]["unexplained"] == 15
    # Killed and never back: no replay needed to read what it had received, so retention did not take it.
    down = check_run(
        write_run(
            tmp_path / "down", sent, flow, history=samples + [killed], progress={"egress": progress["egress"][:1]}
        )
    )
    assert down[CAUSES]["lost"]["retention"] == int(never_received.sum()) == 5


def test_sliding_windows_count_a_record_in_each_window_it_falls_in_and_late_is_per_window():
    import pandas as pd

    from harness.evidence.watermark import dropped_rows, windows_of

    index, starts = windows_of(np.array([12_500, 20_000]), 10_000, 5_000)
    assert list(zip(index, starts)) == [(0, 10_000), (0, 5_000), (1, 20_000), (1, 15_000)]
    assert list(windows_of(np.array([12_500]), 10_000, 10_000)[1]) == [10_000]  # tumbling: one window
    # Batch 1 reads offset 0 (event time 12.5 s) with batch 0's watermark of 19 s: late for the window [5, 15),
    # which had ended, not for [10, 20), which had not.
    events = [
        {"event": "progress", "progress": {"batchId": b, "eventTime": {"watermark": w}, "sources": [s]}}
        for b, w, s in (
            (0, "1970-01-01T00:00:19.000Z", {"startOffset": {}, "endOffset": {"t": {"0": 0}}}),
            (1, "1970-01-01T00:00:19.000Z", {"startOffset": {"t": {"0": 0}}, "endOffset": {"t": {"0": 1}}}),
        )
    ]
    records = pd.DataFrame({"rid": [7], "partition": [0], "offset": [0], "key": [1], "event_time_ms": [12_500]})
    late = dropped_rows(events, "t", records, 10_000, 5_000)
    assert list(late.window_start_ms) == [5_000] and list(late.batch_id) == [1]


@st.composite
def _batches_read(draw):
    """Records of up to three partitions and the batches a counter ran over them, a redeploy's reading back and a
    batch reported twice among them."""
    parts = draw(st.integers(1, 3))
    records = draw(
        st.lists(st.tuples(st.integers(0, parts - 1), st.integers(0, 30), st.integers(0, 60_000)), max_size=40)
    )
    position, events = [0] * parts, []
    for batch in range(draw(st.integers(0, 6))):
        start = {str(p): position[p] for p in range(parts)}
        for p in range(parts):
            position[p] = max(0, position[p] + draw(st.integers(-8, 10)))  # below 0: read back (a redeploy)
        end = {str(p): position[p] for p in range(parts)}
        watermark = f"1970-01-01T00:00:{draw(st.integers(0, 59)):02d}.000Z"
        events.append(
            {
                "event": "progress",
                "progress": {
                    "batchId": draw(st.sampled_from([batch, max(batch - 1, 0)])),
                    "eventTime": {"watermark": watermark},
                    "sources": [{"startOffset": {"t": start}, "endOffset": {"t": end}}],
                },
            }
        )
    return records, events, draw(st.sampled_from([(10_000, 10_000), (10_000, 5_000), (20_000, 10_000)]))


@settings(max_examples=150, deadline=None)
@given(_batches_read())
def test_the_rows_dropped_behind_the_watermark_are_those_a_brute_force_pairing_finds(case):
    """Every record against every batch that read it (its partition, its offset in the batch's range), late for
    each window of it that ended at or before the watermark of the batches before: counted here with loops."""
    import pandas as pd

    from harness.evidence.watermark import batch_ranges, dropped_rows

    rows, events, (size, slide) = case
    records = pd.DataFrame(rows, columns=["partition", "offset", "event_time_ms"], dtype="int64")
    records = records.assign(rid=np.arange(len(records)), key=records.partition * 7)
    expected = []
    ranges = batch_ranges(events, "t").reset_index(drop=True)
    for r in records.itertuples():
        for b in ranges.itertuples():
            if b.partition == r.partition and b.start <= r.offset < b.end:
                first = r.event_time_ms // slide * slide
                for start in range(first, first - size, -slide):
                    if start + size <= b.late_watermark_ms:
                        expected.append((r.rid, b.batch_id, start))
    found = dropped_rows(events, "t", records, size, slide)
    assert list(zip(found.rid, found.batch_id, found.window_start_ms)) == expected


def test_a_store_whose_seq_changes_type_after_its_first_block_is_read_once_whole(tmp_path):
    """SQLite lets a column hold any type; ADBC fixes a column's type from its first rows, so a text seq past the
    first block stops it there and Python reads on from that row: every row once, in order, each block in memory
    alone (the engines stream the store so)."""
    db = tmp_path / "egress.sqlite"
    n = SQLITE_BATCH_ROWS + 10
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE records (key TEXT, seq, batch_id INTEGER)")
        conn.executemany("INSERT INTO records VALUES ('k0001', ?, 0)", [(i,) for i in range(n)])
        conn.executemany("INSERT INTO records VALUES (?, ?, 0)", [("k0001", "x7"), ("k0002", 5)])
    blocks = list(egress_blocks(db, "SELECT key, seq, batch_id FROM records", lambda block: block))
    assert len(blocks) == 2 and blocks[0].num_rows == SQLITE_BATCH_ROWS, [b.num_rows for b in blocks]
    seqs = [v for block in blocks for v in block.column("seq").to_pylist()]
    assert [int(s) for s in seqs[:n]] == list(range(n)) and seqs[n:] == ["x7", "5"]


def test_a_key_records_absent_from_a_recording_are_homed_where_its_records_around_them_went():
    """Key 0 went to partition 0, then (partitions added) to partition 1: its record missing between the two is
    homed by the one before it, one after the last by the last; key 1's first, missing, by the one after it; a key
    with no record recorded, or an identity that is not a key's seq, has no home."""
    present = rids(np.array([0] * 20 + [1]), np.array([*range(10), *range(20, 30), 5]))
    partitions = np.array([0] * 10 + [1] * 10 + [1])
    absent = np.concatenate([rids(np.array([0, 0, 1, 2]), np.array([15, 35, 0, 3])), [-5]])
    assert key_homes(present, partitions, absent).tolist() == [0, 1, 1, -1, -1]
