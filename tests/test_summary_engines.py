"""The engines (harness/checker/summary/) proven against the numpy path on the same evidence: each hop's lost,
copied, phantom, reordered and dropped records, in the same order, and the same report. The dense engine on
generated evidence of every kind; Spark's SQL text on evidence with every anomaly class at once, in a local session
(and on a real run on a standalone cluster: tests/test_real_evidence.py)."""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
from functools import partial

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contract.segments import SegmentWriter, identity_columns, read_segment, segments
from harness.checker import egress_readers, store_copies
from harness.checker.arrivals import tally
from harness.checker.causes import RETENTION
from harness.checker.check import check_run, judged_from_notable
from harness.checker.copies import sent_copies
from harness.checker.counts import CAUSES, COUNTS, HOP_FINDINGS
from harness.checker.egress_readers import STATE_QUERY
from harness.checker.fault_results import FAULTS
from harness.checker.faults import fault_spans
from harness.checker.file_readers import EvidenceError
from harness.checker.hops import hop_data, reconcile_hops
from harness.checker.intermediate import Tallies
from harness.checker.latency import LATENCY, percentiles_ms
from harness.checker.load import load_evidence
from harness.checker.periods import PERIODS, planned_span_ms, sendings
from harness.checker.record_ids import rids, split_rid
from harness.checker.selection import Selection
from harness.checker.summary.engines import Engine
from harness.checker.summary.engines import engine as named_engine
from harness.errors import BeyondDense
from tests.conftest import refusing_port, run_harness
from tests.synthetic_run import HOPS, T0, Flow, Sent, clean_flow, make_sent, write_run
from tests.test_checker_properties import build, every_class, plans, write_lost_responses

DENSE = named_engine("dense")
ENGINES = (DENSE,)  # the engines cheap enough for every generated case; Spark's: test_sparks_sql_...


def assert_same_reconciliations(root, engine=DENSE) -> Tallies:
    """The engine's reconciliation and tallies are numpy's; returns the tallies."""
    evidence = load_evidence(root)
    hops, spans = hop_data(evidence), fault_spans(evidence.history)
    expected, (found, tallies) = reconcile_hops(evidence, hops), engine(evidence, hops, spans)
    arrivals, tallied = tallies.arrivals, tally(evidence, hops, spans)
    assert arrivals.latency_ms.tolist() == tallied.latency_ms.tolist()
    assert arrivals.records.tolist() == tallied.records.tolist()
    assert (arrivals.waiting_ms, arrivals.first_after_ms) == (tallied.waiting_ms, tallied.first_after_ms)
    by_numpy = sendings(evidence.sent, planned_span_ms(evidence.resolved))
    assert (tallies.sendings is None) == (by_numpy is None)
    if by_numpy is not None:
        grid = ("start_ms", "end_ms", "length_ms")
        assert [getattr(tallies.sendings, g) for g in grid] == [getattr(by_numpy, g) for g in grid]
        assert tallies.sendings.acked.tolist() == by_numpy.acked.tolist()
        assert tallies.sendings.unknown.tolist() == by_numpy.unknown.tolist()
    sent_rids = pd.Index(evidence.sent.rid.to_numpy())
    assert tallies.copies == [sent_copies(hop, sent_rids) for hop in hops]
    codes, seqs = split_rid(evidence.sent.rid.to_numpy()[evidence.sent.rid.to_numpy() >= 0])
    last = pd.Series(seqs).groupby(codes).max()  # each key's last record in the log
    assert sorted(tallies.logged.tolist()) == sorted(rids(last.index.to_numpy(), last.to_numpy()).tolist())
    assert len(expected) == len(found) == len(hops)
    for hop, a, b in zip(hops, expected, found):
        assert a.counts == b.counts, hop.name
        for name in ("lost", "phantom", "dropped"):
            assert np.array_equal(getattr(a, name), getattr(b, name)), (hop.name, name)
        for name in ("duplicated_deliveries", "duplicated_in_state"):
            x, y = getattr(a, name), getattr(b, name)
            assert x.index.tolist() == y.index.tolist() and x.tolist() == y.tolist(), (hop.name, name)
        pd.testing.assert_frame_equal(a.reordered.reset_index(drop=True), b.reordered, check_dtype=False)
    return tallies


def report_text(root, **options) -> str:
    return json.dumps(check_run(root, strict=True, **options).to_dict(), default=str)


def assert_same_reports(root, engines=ENGINES) -> None:
    """Each engine's report of the run is numpy's."""
    expected = report_text(root, engine=None)
    for engine in engines:
        assert report_text(root, engine=engine) == expected, engine.name


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(plans(), st.booleans())
def test_the_dense_engine_finds_what_numpy_finds_hop_by_hop_and_the_report_is_the_same(case, kafka_egress):
    """Also with a Kafka egress (the output topic a third streamlet writes from the flow's egress copies)."""
    sent, plan = case
    flow, history = build(sent, plan)
    root = tempfile.mkdtemp(prefix="synthetic-engine-")
    try:
        output_topic = "delivered" if kafka_egress else None
        write_run(root, sent, flow, mode=plan.mode, history=history, recordings="columnar", output_topic=output_topic)
        for engine in ENGINES:
            assert_same_reconciliations(root, engine)
        assert_same_reports(root)
    finally:
        shutil.rmtree(root)


@pytest.fixture(scope="module")
def spark_session(tmp_path_factory):
    """A local Spark session of the engine's own settings, which each check in this process uses and leaves running
    (harness/checker/summary/spark_engine.py run_spark)."""
    from harness.checker.summary.spark_engine import _session

    session = _session("local[2]", str(tmp_path_factory.mktemp("spark-check")))
    yield session
    session.stop()


@pytest.mark.e2e  # a JVM
@pytest.mark.parametrize("mode, kafka_egress", [("upsert", False), ("append", True), ("dedup", False)])
def test_sparks_sql_finds_every_anomaly_class_as_numpy_does(spark_session, tmp_path, mode, kafka_egress):
    """Spark's SQL text on evidence with every anomaly class at once, and topic copies without the source's header:
    each hop's records and tallies, and the report, numpy's."""
    from harness.checker.summary.spark_engine import run_spark

    spark = Engine("spark", partial(run_spark, master="local[2]"))
    sent, plan = every_class(mode)
    flow, history = build(sent, plan)
    output_topic = "delivered" if kafka_egress else None
    carried = {topic: np.arange(len(index)) % 7 != 3 for topic, index in flow.topics.items()}  # a seventh lost it
    root = write_run(
        tmp_path / "run",
        sent,
        flow,
        mode=mode,
        history=history,
        recordings="columnar",
        output_topic=output_topic,
        header=("trace", carried),
    )
    write_lost_responses(root, sent, plan.retried_read)
    counts = check_run(root, strict=True, engine=None)[COUNTS]
    assert all(getattr(counts, c) for c in ("lost", "duplicated_deliveries", "phantom", "reordered")), counts
    assert_same_reconciliations(root, spark)
    assert_same_reports(root, (spark,))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-5_000, 5_000_000), min_size=1, max_size=300))
def test_percentiles_of_a_tally_are_numpys_percentiles_of_its_values(values):
    latency_ms, records = np.unique(values, return_counts=True)
    found = percentiles_ms(latency_ms, records, (0, 50, 90, 99, 100))
    assert found == pytest.approx(np.percentile(values, [0, 50, 90, 99, 100]), rel=1e-12, abs=1e-9)


def test_the_stores_state_is_read_from_sqlite_once_in_a_check_and_its_copy_goes_with_the_check(tmp_path, monkeypatch):
    """harness/checker/store_copies.py: a check with an engine reads the store's state from SQLite in its first pass
    only (the engine's pass and the notable records' read the copy), gives numpy's report, and leaves no copy; a
    database changed since it was copied is read again."""
    sent = make_sent(3, 300)
    flow = clean_flow(sent)
    flow.state = np.concatenate([flow.state, flow.state[:7]])  # copies in the state: notable
    root = write_run(tmp_path / "run", sent, flow, recordings="columnar")
    monkeypatch.setattr(store_copies, "FEWEST_ROWS", 1)
    reads, folders = [], []
    read_sqlite, copying = egress_readers._sqlite_batches, store_copies.Copying.__init__
    monkeypatch.setattr(egress_readers, "_sqlite_batches", lambda db, sql: reads.append(sql) or read_sqlite(db, sql))

    def noting(self, db, sql):
        copying(self, db, sql)
        folders.extend([self.path.parent] if self.path else [])  # none outside a check with an engine

    monkeypatch.setattr(store_copies.Copying, "__init__", noting)
    expected = report_text(root, engine=None)
    assert '"duplicated_in_state": 7' in expected
    for engine in ENGINES:
        reads.clear()
        assert report_text(root, engine=engine) == expected, engine.name
        assert reads.count(STATE_QUERY) == 1, (engine.name, reads)
    assert folders and not any(folder.exists() for folder in folders)
    db = root / "egress" / "egress.sqlite"
    with store_copies.kept_for_one_check():
        assert sum(egress_readers.egress_blocks(db, STATE_QUERY, len)) == 907
        assert store_copies.copied(db, STATE_QUERY) is not None
        with sqlite3.connect(db) as connection:
            connection.execute("INSERT INTO records (key, seq, batch_id) VALUES ('k0000', 0, 0)")
        assert store_copies.copied(db, STATE_QUERY) is None
        assert sum(egress_readers.egress_blocks(db, STATE_QUERY, len)) == 908


def test_odd_identities_in_the_store_and_the_audit_are_the_records_numpy_names(tmp_path, monkeypatch):
    """Seqs that are not ordinary (negative, beyond 2**40, text, none, a whole number written as text with spaces:
    RecordIds names it by the number, yet it is not that ordinary record) and a missing key, in the egress's state
    and audit: each is its own record or phantom, as RecordIds says."""
    sent = make_sent(3, 20)
    root = write_run(tmp_path / "run", sent, clean_flow(sent), recordings="columnar")
    odd = [("k0000", -3), ("k0001", 1 << 41), ("k0002", "x7"), ("k0001", None), (None, 5)]
    with sqlite3.connect(root / "egress" / "egress.sqlite") as db:
        db.executemany("INSERT INTO records (key, seq, batch_id) VALUES (?, ?, 0)", odd + odd[:2])
    audit = root / "egress" / "egress.audit" / "main"
    (first,) = segments(audit)
    written, _ = read_segment(first)
    delivered = [*odd, ("k0000", " 4 "), ("k0000", " 4 "), ("k0000", "-2 "), ("k0002", 2.0)]
    identity = identity_columns([k for k, _ in delivered], [s for _, s in delivered])
    like_first = written.slice(0, 1).take(pa.array([0] * len(delivered)))  # every other column as its first row's
    extra = like_first.drop_columns(["key", "seq"]).append_column("key", identity["key"])
    extra = extra.append_column("seq", identity["seq"]).append_column("seq_text", identity["seq_text"])
    with SegmentWriter(audit) as writer:
        writer.write(extra)
    monkeypatch.setattr(store_copies, "FEWEST_ROWS", 1)  # the state's seqs change type: read again, not copied
    report = check_run(root, strict=True)
    assert report[COUNTS].phantom == 8 and report[COUNTS].duplicated_in_state == 0, report[COUNTS]
    for engine in ENGINES:
        assert_same_reconciliations(root, engine)
    assert_same_reports(root)


def test_a_run_that_did_not_finish_is_judged_from_its_notable_records_as_numpy_judges_it(tmp_path):
    """run.json missing: the processor committed a batch past six records it never wrote (proven lost: the run
    recorded its topics whole), the last records of keys 0, 2 and 3 are still in flight (undelivered), and the
    egress holds records of key 1 past the log's last seq (sent before the log's last write: not phantoms yet), one
    of key 1 below it that the log never had, and one of a key never sent (phantoms). Key 1's last logged record is
    delivered, so only the engine's count of the whole log knows where its seqs end. The default check counts it
    with the dense engine and loads only the notable records' rows."""
    whole = make_sent(4, 60)
    logged = np.arange(len(whole)) != 30 * 4 + 1  # key 1's seq 30: not in the log
    sent = Sent(
        *(getattr(whole, f)[logged] for f in ("key", "seq", "partition", "offset", "event_time_ms", "late")),
        whole.acked[logged],
    )
    every = np.arange(len(sent))
    gone = np.arange(9, 15)  # early records: below the offsets the processor committed
    in_flight = every[-40:][sent.key[-40:] != 1]
    processed = np.setdiff1d(every, np.concatenate([gone, in_flight]))
    phantoms = np.arange(len(sent), len(sent) + 4)
    audit = np.concatenate([processed, phantoms])
    flow = Flow(
        {"ingested": every, "processed": processed},
        audit,
        audit,
        phantom_key=np.array([1, 1, 1, 1000]),
        phantom_seq=np.array([30, 60, 61, 0]),
    )
    read_to = {"0": 60, "1": 60}  # the processor committed reading ingested to here (each partition about 120)
    progress = {
        "processor": [
            {"ts_ms": T0, "event": "progress", "progress": {"sources": [{"endOffset": {"ingested": read_to}}]}}
        ]
    }
    recorded = [{"ts_ms": T0 + 1000, "event": "topics_recorded", "topics": ["ingested", "processed"]}]
    root = write_run(tmp_path / "run", sent, flow, history=recorded, progress=progress, recordings="columnar")
    (root / "run.json").unlink()
    assert judged_from_notable(load_evidence(root, Selection.nothing()))
    report = check_run(root, strict=True)
    assert report.unfinished.startswith("run.json missing")
    counts = report[COUNTS]
    assert (counts.lost, counts.undelivered, counts.phantom) == (6, len(in_flight), 2), counts
    assert any("2 record(s) reached the pipeline before the acknowledgement log" in g for g in report.gaps)
    assert_same_reports(root)
    # the same run still going (its egress alive): read as one snapshot, judged from its notable rows too
    still = report_text(root, engine=DENSE, running=("egress",))
    assert still == report_text(root, engine=None, running=("egress",)) and '"status": "running"' in still


def test_copies_without_the_sources_header_are_counted_per_topic_as_numpy_counts_them(tmp_path):
    """Every source record carries a header (pipeline.json source_header); two copies at ingested lost it, and at
    processed those two and one more; a phantom without it is no record sent, not counted. The default check
    counts them with the dense engine and loads only the notable records' rows."""
    sent = make_sent(4, 50)
    every = np.arange(len(sent))
    flow = clean_flow(sent)
    flow.topics["processed"] = np.append(every, len(sent))  # and a phantom
    flow.phantom_key, flow.phantom_seq = np.array([7]), np.array([0])
    carried = {
        "ingested": ~np.isin(every, [5, 17]),
        "processed": ~np.isin(np.append(every, len(sent)), [5, 17, 30, 200]),
    }
    root = write_run(tmp_path / "run", sent, flow, recordings="columnar", header=("trace", carried))
    assert judged_from_notable(load_evidence(root, Selection.nothing()))
    report = check_run(root, strict=True)
    assert [h.headers_lost for h in report[HOP_FINDINGS]] == [2, 3, None]
    assert_same_reconciliations(root)
    assert_same_reports(root)


def test_a_run_recorded_in_json_is_refused_in_one_line_with_what_to_do(tmp_path):
    sent = make_sent(2, 10)
    root = write_run(tmp_path / "run", sent, clean_flow(sent), recordings="json")
    with pytest.raises(EvidenceError, match="not in columnar form: convert it with `harness compact"):
        DENSE(load_evidence(root), hop_data(load_evidence(root)), [])
    result = run_harness("check", str(root), "--engine", "dense")
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.count("\n") == 1 and "harness compact" in result.stderr and not result.stdout
    assert run_harness("check", str(root), "--master", "local[1]").returncode == 2  # --master is Spark's


def test_seqs_too_sparse_for_the_dense_engines_blocks_are_refused_in_one_line_with_what_to_do(tmp_path):
    sent = make_sent(2, 10)
    sent.seq = sent.seq * 10**7  # 20 lines over 180 million seqs
    root = write_run(tmp_path / "run", sent, clean_flow(sent), recordings="columnar")
    result = run_harness("check", str(root), "--engine", "dense")
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.count("\n") == 1 and "use --engine spark" in result.stderr and not result.stdout
    assert run_harness("check", str(root)).returncode == 0  # by default, numpy where dense cannot place them


def test_a_spark_master_that_does_not_answer_is_named_in_one_line(tmp_path):
    sent = make_sent(2, 10)
    root = write_run(tmp_path / "run", sent, clean_flow(sent), recordings="columnar")
    with refusing_port() as port:
        nobody = f"spark://127.0.0.1:{port}"
        result = run_harness("check", str(root), "--engine", "spark", "--master", nobody)
    assert result.returncode == 2 and not result.stdout
    expected = f"harness: error: Spark master {nobody} does not answer: is the cluster up, and the URL its master's?"
    assert result.stderr == expected + "\n"


def test_records_dropped_by_design_are_counted_dropped_not_lost_at_the_hops_after_the_dropper(tmp_path):
    """The processor declares six records dropped (dropped/processor.jsonl): four it dropped, one it passed on
    anyway, one never sent (an odd seq)."""
    sent = make_sent(4, 20)
    every = np.arange(len(sent))
    gone = np.array([3, 17, 40, 41])
    kept = np.setdiff1d(every, gone)
    root = write_run(
        tmp_path / "run", sent, Flow({"ingested": every, "processed": kept}, kept, kept), recordings="columnar"
    )
    declared = [{"key": f"k{sent.key[i]:04d}", "seq": int(sent.seq[i])} for i in [*gone, 60]] + [
        {"key": "k0001", "seq": "x"}
    ]
    (root / "dropped").mkdir(exist_ok=True)
    (root / "dropped" / "processor.jsonl").write_text("".join(json.dumps(d) + "\n" for d in declared))
    report = check_run(root, strict=True)
    assert report[COUNTS].lost == 0 and report[COUNTS].dropped == 5, report[COUNTS]
    for engine in ENGINES:
        assert_same_reconciliations(root, engine)
    assert_same_reports(root)


def test_a_kafka_egress_after_two_topics_inherits_their_copies_and_makes_its_writers_own(tmp_path):
    """The output topic `delivered` (the egress) is written by a third streamlet from `processed`: a copy the
    processor made is inherited there, and the writer's replayed batch is made there."""
    sent = make_sent(4, 200)
    every = np.arange(len(sent))
    processed = np.insert(every, 10, every[:3])  # the processor wrote records 0-2 again
    delivered = np.insert(processed, 500, processed[400:405])  # the writer wrote five again
    flow = Flow({"ingested": every, "processed": processed}, delivered, np.array([], np.int64))
    root = write_run(tmp_path / "run", sent, flow, recordings="columnar", output_topic="delivered")
    report = check_run(root, strict=True)
    egress = report[HOP_FINDINGS][-1]
    assert [h.name for h in report[HOP_FINDINGS]] == ["ingested", "processed", "egress"]
    assert (egress.copies.extra, egress.copies.made_here, egress.copies.inherited) == (8, 5, 3)
    assert egress.copies.extra_in_state == 8 and report[COUNTS].duplicated_deliveries == 8
    for engine in ENGINES:
        assert_same_reconciliations(root, engine)
    assert_same_reports(root)


def test_a_retention_shrink_of_an_intermediate_topic_is_judged_from_the_records_it_put_at_risk(tmp_path):
    """The processor stopped at offset 10 of ingested's partition 0 and resumed at its log start, 20: of the ten
    records deleted unread, three had reached processed before the stop (ordinary records everywhere, so only the
    deleted range makes them notable) and seven were lost. The engine path loads only the notable records' rows and
    counts the window as numpy does."""
    sent = make_sent(4, 20)
    every = np.arange(len(sent))
    in_partition = every[sent.key % 2 == 0]  # ingested's partition 0, at offsets 0, 1, ... in this order
    lost = in_partition[13:20]
    kept = np.setdiff1d(every, lost)
    history = [
        {
            "ts_ms": T0 - 900,
            "event": "consumer_position",
            "streamlet": "processor",
            "partitions": [["ingested", 0, 10]],
        },
        {
            "ts_ms": T0 - 800,
            "event": "log_start_observed",
            "streamlet": "processor",
            "partitions": [["ingested", 0, 20, 40]],
        },
    ]
    flow = Flow({"ingested": every, "processed": kept}, kept, kept)
    root = write_run(tmp_path / "run", sent, flow, history=history, recordings="columnar")
    report = check_run(root, strict=True)
    [window] = report[RETENTION]
    assert (window["acked_in_window"], window["reached_downstream"], window["lost"]) == (10, 3, 7), window
    assert report[COUNTS].lost == 7 and report[CAUSES]["lost"]["retention"] == 7, (report[COUNTS], report[CAUSES])
    assert judged_from_notable(load_evidence(root, Selection.nothing()))
    assert_same_reports(root)


def test_the_arrivals_the_sql_tallies_are_numpys_and_the_latency_and_first_output_follow(tmp_path):
    """Arrivals of every kind the tally reads, counted here from the audit as written: a first arrival whose event
    time the audit did not record (the acknowledgement log's counts), a phantom's likewise (not counted), late
    events (not counted), copies (the first counts); a fault whose downtime overlaps the records in flight, and
    arrivals after its restart. And the sendings: records not acknowledged, and two whose time is not known."""
    sent = make_sent(4, 50)
    sent.late[[5, 9, 30]] = True
    sent.acked[[11, 12]] = False
    sent.event_time_ms[:] = T0 + np.arange(len(sent)) * 150  # 30 s: periods of 2 s
    sent.event_time_ms[[40, 41]] = 0  # a time not known: no period
    every = np.arange(len(sent))
    audit = np.concatenate([every, every[:20], [len(sent), len(sent) + 1]])  # copies, then two phantoms
    flow = Flow({hop: every for hop in HOPS}, audit, every, np.array([1000, 1001]), np.zeros(2, np.int64))
    fault = {"kind": "kill-driver", "target": "processor", "scope": "streamlet", "restarts": True, "recovers": True}
    history = [
        {"ts_ms": T0 + 300, "event": "fault_begun", "signal": "SIGKILL", **fault},
        {"ts_ms": T0 + 800, "event": "process_started", "process": "streamlet-processor", "streamlet": "processor"},
        {"ts_ms": T0 + 900, "event": "fault_ended", "kind": "kill-driver", "target": "processor", "restarted": True},
    ]
    progress = {"processor": [{"ts_ms": T0 + 1500, "event": "progress", "progress": {"numInputRows": 5}}]}
    root = write_run(tmp_path / "run", sent, flow, history=history, progress=progress, recordings="columnar")
    folder = root / "egress" / "egress.audit" / "main"
    (written,) = segments(folder)
    table, _ = read_segment(written)
    rows = np.arange(table.num_rows)
    unrecorded = (rows % 3 == 0) | (rows == rows[-1])  # one in three, and the last phantom
    carried = np.where(unrecorded, -1, table["event_time_ms"].to_numpy())
    arrivals = table["event_time_ms"].to_numpy() + 200 + (rows * 37) % 1500
    for name, values in (("event_time_ms", carried), ("received_ms", arrivals)):
        table = table.set_column(table.schema.get_field_index(name), name, pa.array(values))
    written.unlink()
    with SegmentWriter(folder) as writer:
        writer.write(table)

    # counted here: each record's first row, on time, its event time from the row or else from sent
    first = np.unique(audit, return_index=True)[1]
    index, carried, arrived = audit[first], carried[first], arrivals[first]
    known = (index < len(sent)) | (carried >= 0)
    on_time = known & ~sent.late[np.minimum(index, len(sent) - 1)]
    event = np.where(carried >= 0, carried, sent.event_time_ms[np.minimum(index, len(sent) - 1)])[on_time]
    took = arrived[on_time] - event
    waited = np.clip(np.minimum(arrived[on_time], T0 + 1500) - np.maximum(event, T0 + 300), 0, None).sum()

    for engine in ENGINES:
        tallied = assert_same_reconciliations(root, engine).arrivals
        assert int(tallied.records.sum()) == len(took) == 200 - 3 + 1 and tallied.waiting_ms == waited > 0
    report = check_run(root, strict=True)
    assert report[LATENCY].records == len(took) and report[LATENCY].max_s == took.max() / 1000
    for value, q in zip((report[LATENCY].p50_s, report[LATENCY].p90_s, report[LATENCY].p99_s), (50, 90, 99)):
        assert value == pytest.approx(np.percentile(took, q) / 1000, abs=0.0006)
    assert report[LATENCY].restart_share == round(waited / took.sum(), 3)
    periods = report[PERIODS]  # by the acknowledgement log's times: two not known, two records not acknowledged
    assert (periods.unplaced.acked, sum(p.counts.acked for p in periods.periods)) == (2, 200 - 2 - 2)
    assert sum(p.counts.unknown for p in periods.periods) == 2 and periods.length_s == 2
    timed = sent.event_time_ms > 0
    per_period = np.bincount((sent.event_time_ms[timed] - T0) // 2000)  # the first record is on time, at T0
    assert [p.counts.acked + p.counts.unknown for p in periods.periods] == per_period.tolist()
    (result,) = report[FAULTS]
    assert result.output_s == (arrivals[arrivals > T0 + 800].min() - (T0 + 300)) / 1000
    assert_same_reports(root)


def test_spark_shuffles_into_more_partitions_as_the_evidence_grows(tmp_path):
    from harness.checker.summary.sources import Source
    from harness.checker.summary.spark_engine import PARTITION_BYTES, PARTITIONS, shuffle_partitions

    def folder(name: str, sizes: list[int]) -> str:
        path = tmp_path / name
        path.mkdir()
        for n, size in enumerate(sizes):
            with open(path / f"{n:06d}.arrows", "wb") as f:
                f.truncate(size)  # sparse: the size is what counts
        return str(path)

    small = {"sent": Source(folders=(folder("a", [1 << 20]),)), "state": Source(db="x.sqlite", sql="SELECT 1")}
    assert shuffle_partitions(small) == PARTITIONS[0]  # a run this small: the fewest
    hops = (folder("b", [PARTITION_BYTES * 30]), folder("c", [PARTITION_BYTES * 20, PARTITION_BYTES * 10]))
    assert shuffle_partitions({**small, "hop": Source(folders=hops)}) == 60
    assert shuffle_partitions({"huge": Source(folders=(folder("d", [PARTITION_BYTES * 10**4]),))}) == PARTITIONS[1]


def test_offsets_a_recording_missed_outside_any_retention_shrink_are_judged_from_the_notable_records(tmp_path):
    """The recording of `ingested` missed offsets 10 to 19 of partition 0 (routine retention, no shrink): the records
    there are missing at that hop and named in a gap, and no cause places them, so the default check judges the run
    from its notable records' rows as numpy judges it whole. With a shrink over those offsets, only an engine naming
    the records that place the lost ones there does (dense)."""
    sent = make_sent(4, 25)
    every = np.arange(len(sent))
    unrecorded = (sent.partition == 0) & (sent.offset >= 10) & (sent.offset < 20)
    flow = clean_flow(sent)
    flow.topics["ingested"] = every[~unrecorded]
    missed = [{"ts_ms": T0, "event": "topics_recorded", "topics": ["ingested"], "missed": [["ingested", 0, 10, 20]]}]
    root = write_run(tmp_path / "run", sent, flow, history=missed, recordings="columnar")
    assert judged_from_notable(load_evidence(root, Selection.nothing()))
    report = check_run(root, strict=True)
    assert report[HOP_FINDINGS][0].counts.lost == int(unrecorded.sum()) > 0 and report[COUNTS].lost == 0
    assert any("offsets 10 to 19 of partition 0 were deleted by retention" in g for g in report.gaps)
    assert_same_reports(root)
    shrink = [
        {"ts_ms": 1, "event": "consumer_position", "streamlet": "processor", "partitions": [["ingested", 0, 5]]},
        {"ts_ms": 2, "event": "log_start_observed", "streamlet": "processor", "partitions": [["ingested", 0, 25]]},
    ]
    shrunk = write_run(tmp_path / "shrunk", sent, flow, history=shrink + missed, recordings="columnar")
    structure = load_evidence(shrunk, Selection.nothing())
    assert not judged_from_notable(structure) and judged_from_notable(structure, complete=True)


def test_offsets_missed_in_a_shrink_with_source_offsets_out_of_send_order_are_judged_whole(tmp_path):
    """The recording of `ingested` missed offsets a shrink deleted, and the acknowledgement log's offsets of source
    partition 0 fall as its lines go on (not one producer's log in send order): the dense engine cannot name the
    records placing the lost ones by offset (named, it says so in one line), so the default check judges the run
    whole, by numpy."""
    sent = make_sent(4, 25)
    zero = np.flatnonzero(sent.partition == 0)
    sent.offset[zero] = sent.offset[zero][::-1]
    flow = clean_flow(sent)
    every = np.arange(len(sent))
    flow.topics["ingested"] = every[~((sent.partition == 0) & (sent.offset >= 10) & (sent.offset < 20))]
    history = [
        {"ts_ms": 1, "event": "consumer_position", "streamlet": "processor", "partitions": [["ingested", 0, 5]]},
        {"ts_ms": 2, "event": "log_start_observed", "streamlet": "processor", "partitions": [["ingested", 0, 25]]},
        {"ts_ms": 3, "event": "topics_recorded", "topics": ["ingested"], "missed": [["ingested", 0, 10, 20]]},
    ]
    root = write_run(tmp_path / "run", sent, flow, history=history, recordings="columnar")
    evidence = load_evidence(root)
    with pytest.raises(BeyondDense, match="source partition 0's offsets do not rise"):
        DENSE(evidence, hop_data(evidence), fault_spans(evidence.history))
    assert report_text(root) == report_text(root, engine=None)
