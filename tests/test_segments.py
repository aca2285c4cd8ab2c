"""Columnar evidence (contract/segments.py, harness/evidence/topics.py): segments written append-only, a cut segment
read up to its last whole batch, a run directory's recordings compacted with nothing lost."""

from __future__ import annotations

import json
import threading

import numpy as np
import pyarrow as pa
import pytest

from contract.segments import SegmentWriter, identity_columns, read_segments, segments
from harness.checker.check import check_run
from harness.checker.counts import HOP_FINDINGS
from harness.checker.egress_readers import EgressRead, _exported_state, _state_segments
from harness.checker.file_readers import EvidenceError
from harness.checker.load import load_evidence
from harness.checker.read_ahead import read_ahead
from harness.checker.record_ids import RecordIds
from harness.evidence.compact import compact_run, compact_state
from harness.evidence.description import StreamletDescription
from harness.evidence.layout import RunLayout
from harness.evidence.topics import RecordingColumns
from pipelines.audit import Deliveries
from tests.evidence_helpers import egress_counts
from tests.synthetic_run import Flow, clean_flow, make_sent, write_run


def _batch(first: int, rows: int, **extra) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({"i": np.arange(first, first + rows)} | extra)


def test_segments_rotate_by_rows_and_columns_and_a_new_writer_numbers_on(tmp_path):
    with SegmentWriter(tmp_path, rows_per_segment=10) as writer:
        writer.write(_batch(0, 6))
        writer.write(_batch(6, 6))  # 12 rows: the next batch opens a second segment
        writer.write(_batch(12, 3))
        writer.write(_batch(15, 2, stamp=pa.array([7, 8], pa.int32())))  # new columns: a third
    with SegmentWriter(tmp_path) as writer:  # a writer restarted in the same folder never rewrites a segment
        writer.write(_batch(17, 3))
    assert [p.name for p in segments(tmp_path)] == [f"00000{n}.arrows" for n in range(4)]
    table, problems = read_segments(tmp_path)
    assert problems == []
    assert table["i"].to_pylist() == list(range(20))
    assert table["stamp"].to_pylist() == [None] * 15 + [7, 8] + [None] * 3


def test_a_segment_cut_mid_batch_keeps_its_whole_batches_and_names_the_cut(tmp_path):
    with SegmentWriter(tmp_path) as writer:
        for first in (0, 100, 200):
            writer.write(_batch(first, 100))
    [path] = segments(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 40])  # the last batch (and the stream's end) cut off
    (tmp_path / "000001.arrows").write_bytes(b"")  # opened, never written: a crash right after a rotation
    table, problems = read_segments(tmp_path)
    assert table["i"].to_pylist() == list(range(200))
    assert problems[0].startswith("000000.arrows: cut mid-batch after 200 rows, kept")
    assert problems[1].startswith("000001.arrows: unreadable, skipped")


def test_recording_columns_keep_what_the_checker_reads_of_any_value():
    lines = [
        {"partition": 0, "offset": 0, "timestamp_ms": 5, "value": {"key": "k1", "seq": 3, "batches": {"a": 1}}},
        {"partition": 1, "offset": 0, "timestamp_ms": 6, "value": {"key": 7, "seq": "x", "batches": {"b": 2}}},
        {"partition": 1, "offset": 1, "timestamp_ms": 7, "value": "not json", "headers": {"trace": ""}},
        {"partition": 0, "offset": 1, "timestamp_ms": None, "value": {"key": "k1", "seq": 2.5, "count": 4}},
    ]
    batch = RecordingColumns().batch(lines).to_pydict()
    assert batch["key"] == ["k1", "7", None, "k1"]
    assert batch["seq"] == [3, None, None, None]
    assert batch["seq_text"] == [None, "x", None, "2.5"]
    assert batch["count"] == [None, None, None, 4]
    assert batch["batch.a"] == [1, None, None, None] and batch["batch.b"] == [None, 2, None, None]
    assert batch["headers"] == [[], [], [("trace", "")], []]
    assert batch["timestamp_ms"] == [5, 6, 7, 0]


def test_an_audit_of_arrow_columns_writes_what_one_of_lists_does(tmp_path):
    lists = [
        ["k1", "k2", None],  # key
        [0, 7, None],  # seq: a record without one is a phantom's, kept as null
        [5, 6, 7],  # event_time_ms
        ['{"a": 1}', '{"a": 1}', "{}"],  # batches
        ["t", "t", "t"],  # topic
        [0, 1, 1],  # partition
        [10, 11, 12],  # offset
    ]
    kinds = [pa.string(), pa.int64(), pa.int64(), pa.string(), pa.string(), pa.int32(), pa.int64()]
    arrow = [pa.chunked_array([pa.array(c, k)]) for c, k in zip(lists, kinds)]
    written = {}
    for name, columns in (("lists", lists), ("arrow", arrow)):
        Deliveries(str(tmp_path / name), lambda: None).record("main", 3, *columns)
        written[name] = read_segments(tmp_path / name / "main")[0].drop_columns(["received_ms"])
    assert written["arrow"].equals(written["lists"]), (written["arrow"], written["lists"])
    assert written["arrow"].column("seq").to_pylist() == [0, 7, None]
    assert "seq_text" not in written["arrow"].column_names
    # keys or seqs of another type go the way of lists: what is not an integer seq is kept as text
    assert identity_columns(pa.array([1, 2]), pa.array(["x", "3"]))["seq_text"].to_pylist() == ["x", "3"]


def test_compacting_a_run_keeps_its_report_and_a_damaged_file_whole(tmp_path):
    sent = make_sent(4, 500)
    flow = clean_flow(sent)
    every = np.arange(len(sent))
    flow = Flow({"ingested": every, "processed": np.concatenate([every[:-10], every[:7]])}, flow.audit, flow.state)
    root = write_run(tmp_path / "run", sent, flow)
    before = check_run(root).to_dict()
    with open(root / "topics" / "processed.jsonl", "a") as dump:
        dump.write('{"partition": 0, "offset": 99')  # a writer killed mid-line
    done = {c.name: c for c in compact_run(root)}
    ingested, processed, acks = done["topics/ingested.jsonl"], done["topics/processed.jsonl"], done["acks.csv"]
    assert ingested.records == acks.records == len(sent) and ingested.bytes_after < ingested.bytes_before / 5
    assert done["egress/egress.sqlite (audit)"].records == len(flow.audit)
    assert (root / "egress" / "egress.audit" / "main").is_dir() and not egress_counts(root, "egress", "audit")
    assert processed.kept_because == f"line {len(sent) - 10 + 7 + 1} is cut mid-record: kept whole"
    assert not (root / "topics" / "ingested.jsonl").exists() and (root / "topics" / "processed.jsonl").is_file()
    assert (root / "acks").is_dir() and not (root / "acks.csv").exists()
    assert not list(root.rglob("*.partial"))
    after = check_run(root).to_dict()
    assert [g for g in after.pop("gaps") if "cut mid-record" not in g] == [] and after.pop("partial")
    before.pop("gaps"), before.pop("partial")
    assert json.dumps(after, default=str) == json.dumps(before, default=str)
    assert load_evidence(root).topics["ingested"].rid.nunique() == len(sent)


def test_the_checker_judges_a_columnar_run_with_a_cut_segment_and_names_the_cut(tmp_path):
    sent = make_sent(4, 300)
    root = write_run(tmp_path / "run", sent, clean_flow(sent), recordings="columnar")
    [segment] = segments(root / "topics" / "processed")
    segment.write_bytes(segment.read_bytes()[:-40])  # its one batch cut: nothing of the hop is left
    report = check_run(root)
    assert any(g.startswith("topics/processed/000000.arrows: cut mid-batch after 0 rows") for g in report.gaps)
    processed = next(h for h in report[HOP_FINDINGS] if h.name == "processed")
    assert processed.counts.lost == len(sent) and report.to_dict()["partial"]


def test_an_outputs_identity_is_read_into_the_columns_and_the_preflight_finds_its_canary_there(tmp_path):
    from contract.identity import IdentityReader
    from harness.outputs.kinds.kafka_topic import RECORDED_IDENTITY, _recorded_identities

    identity = {"id": "order_id", "format": "{key}-{seq}"}
    lines = [
        {"partition": 0, "offset": i, "timestamp_ms": 1, "key": None, "value": {"order_id": f"k{i % 3}-{i}"}}
        for i in range(5)
    ] + [{"partition": 0, "offset": 5, "timestamp_ms": 1, "key": None, "value": {"order_id": "canary-0"}}]
    with SegmentWriter(tmp_path / "out") as writer:
        writer.write(RecordingColumns(identity).batch(lines))
    read = IdentityReader(RECORDED_IDENTITY)
    assert [read(line) for line in _recorded_identities(tmp_path / "out")] == [
        *((f"k{i % 3}", i) for i in range(5)),
        ("canary", 0),
    ]
    assert _recorded_identities(tmp_path / "nothing yet") == []


class _Delivered:
    """What librdkafka hands a delivery callback: the message's partition and offset."""

    def __init__(self, partition: int, offset: int):
        self._at = (partition, offset)

    def partition(self) -> int:
        return self._at[0]

    def offset(self) -> int:
        return self._at[1]


def test_the_ack_log_in_columnar_form_is_counted_as_it_grows_and_read_as_the_csv_is(tmp_path):
    from harness.checker.file_readers import read_acks, read_sent
    from harness.checker.record_ids import RecordIds
    from harness.evidence.acks import AckCounter
    from harness.workload.generator import AckLog

    folder = tmp_path / "acks"
    counter = AckCounter(folder)
    assert (counter.poll().acked, counter.unknown) == (0, 0)  # nothing written yet
    for restart in range(2):  # a generator started again (a canary first, then the workload) numbers on
        log = AckLog(str(folder))
        for seq in range(3):
            delivered = log.add((f"k{restart}", seq, 1000 + seq, 0), resend=False)
            if seq < 2:
                delivered(None, _Delivered(0, 10 * restart + seq))
        log.add((f"k{restart}", 0, 1000, 0), resend=True)(None, _Delivered(1, 99))  # a copy sent on purpose
        log.drain(final=True)
        log.close()
        assert (counter.poll().acked, counter.unknown) == (2 * (restart + 1), restart + 1)
    assert [p.name for p in segments(folder)] == ["000000.arrows", "000001.arrows"]
    table = read_acks(folder, gaps := [])
    sent = read_sent(table, RecordIds(table["key"].combine_chunks()), gaps, "acks/")
    assert gaps == [] and len(sent) == 6 and int(sent.acked.sum()) == 4
    assert sent.resent_copies.tolist() == [1, 0, 0, 1, 0, 0]
    assert sent.offset.tolist() == [0, 1, -1, 10, 11, -1]


def test_an_exported_state_compacted_is_read_as_its_json_lines_are(tmp_path):
    layout = RunLayout(tmp_path)
    lines = [
        {"key": "k1", "seq": 0, "batch_id": 3, "payload": "x"},
        {"key": "k1", "seq": 1},  # no batch given
        {"key": "k2", "seq": "7"},  # a seq written as text: the record it names
        {"key": "k9", "seq": 1.5, "batch_id": "b"},  # a phantom's fractional seq, a batch that is not one
    ]
    path = layout.egress_state("sink")
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    sink = StreamletDescription("sink", "shop:Sink", "egress", {}, ("out",), (), egress_evidence="exported")
    ids = RecordIds(pa.array(["k1", "k2"]))
    as_json = _exported_state(path, ids, [])
    assert compact_state(path, layout.egress_records("sink")) == 4 and not path.exists()
    [as_segments] = _state_segments(EgressRead(layout, sink, ids, []))
    assert as_segments.to_dict("list") == as_json.to_dict("list")
    assert as_json.batch_id.tolist() == [3, -1, -1, -1] and (as_json.rid >= 0).sum() == 3


def test_reading_ahead_gives_every_item_in_order_passes_on_an_error_and_stops_with_its_reader():
    """harness/checker/read_ahead.py: what the loader and the dense engine read segments and blocks with."""
    assert list(read_ahead(iter(range(50)))) == list(range(50))

    def failing():
        yield 1
        raise EvidenceError("segment 2: unreadable")

    with pytest.raises(EvidenceError, match="segment 2"):
        list(read_ahead(failing()))
    endless = read_ahead(iter(range(10**9)))
    assert next(endless) == 0
    endless.close()  # the reader thread is told to stop and joined: nothing left running
    assert not [t for t in threading.enumerate() if t.name == "read-ahead"]
