"""Record values outside Spark (harness.codecs): what the generator writes and the topic dumps read back, in
JSON or Avro, from the same schemas Spark's to_json/to_avro use."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.checker.check import check_run
from harness.checker.counts import COUNTS, HOP_FINDINGS, VERDICT
from harness.codecs import value_decoder, value_encoder
from harness.evidence.topics import dump_line
from harness.runner.console import Console
from harness.runner.run import run_scenario
from harness.scenario import load_scenario
from pipelines.model import SEQ_RECORD, SOURCE_RECORD
from tests.evidence_helpers import acked, why

texts = st.text(max_size=40)
longs = st.integers(min_value=-(2**63), max_value=2**63 - 1)


@given(key=texts, seq=longs, event_ms=longs, payload=st.none() | texts)
def test_a_source_record_round_trips_in_either_codec(key, seq, event_ms, payload):
    record = {"key": key, "seq": seq, "event_time_ms": event_ms, "payload": payload}
    for codec in ("json", "avro"):
        assert value_decoder(codec, SOURCE_RECORD)(value_encoder(codec, SOURCE_RECORD)(record)) == record


@given(
    batches=st.none() | st.dictionaries(st.text(min_size=1, max_size=10), longs, max_size=4),
    millis=st.integers(min_value=0, max_value=4_102_444_800_000),
)
def test_an_avro_record_reads_back_as_the_json_codec_writes_it(batches, millis):
    """A dump is the same JSON whatever the codec: timestamps as Spark's to_json writes them (UTC, milliseconds)."""
    event_time = datetime.fromtimestamp(millis / 1000, timezone.utc)
    record = {"key": "k1", "seq": 7, "event_time": event_time, "payload": None, "batches": batches}
    decoded = value_decoder("avro", SEQ_RECORD)(value_encoder("avro", SEQ_RECORD)(record))
    assert decoded["event_time"] == event_time.strftime("%Y-%m-%dT%H:%M:%S.") + f"{millis % 1000:03d}Z"
    assert {k: v for k, v in decoded.items() if k != "event_time"} == {
        k: v for k, v in record.items() if k != "event_time"
    }


@pytest.mark.parametrize("value", [b"", b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", b'{"key": "k1", "seq": 1}'])
def test_bytes_that_are_not_a_record_of_the_schema_are_kept_as_text_in_the_dump(value):
    decode = value_decoder("avro", SOURCE_RECORD)
    with pytest.raises(ValueError):
        decode(value)
    record = SimpleNamespace(partition=0, offset=5, timestamp=1, key=b"k1", value=value)
    line = json.loads(dump_line(record, decode))
    assert line["value"] == value.decode("utf-8", "replace") and line["offset"] == 5


SHIPPED = Path(__file__).resolve().parent.parent / "scenarios" / "avro-kills.yaml"


def _segment_bytes(run_dir: Path, topic: str) -> bytes:
    """The broker's own log segments of a topic: the values as they were written, in whatever codec."""
    return b"".join(p.read_bytes() for p in (run_dir / "cluster").glob(f"node-*/data/{topic}-*/*.log"))


@pytest.mark.long  # the codecs' round trips are tested above; a pipeline under kills, on JSON, in test_faults.py
@pytest.mark.e2e
def test_an_avro_pipeline_under_kills_makes_and_absorbs_copies_as_the_json_one_does(tmp_path):
    """avro-kills is kafka-sink-in-flight with Avro on every topic; the JSON pipeline's verdicts under the same kills
    are known (tests/test_real_evidence.py runs Spark's Kafka sink killed in flight): copies made at the relay's
    topic, absorbed by the upsert egress, nothing lost."""
    run_dir = tmp_path / "avro"
    summary = run_scenario(load_scenario(SHIPPED), run_dir, console=Console(quiet=True))
    assert summary.status == "complete" and summary.faults_played == 2 and not summary.failed_streamlets, why(summary)
    for topic in ("source", "ingested", "relayed"):  # Avro on the topics: no field names in the values
        assert b'"seq":' not in _segment_bytes(run_dir, topic), topic
    report = check_run(run_dir)
    assert report[COUNTS].acked == len(acked(run_dir)) > 0
    assert report[VERDICT] == "effectively-exactly-once" and report.passed
    hops = {h.name: h for h in report[HOP_FINDINGS]}
    assert [(h.name, h.verdict) for h in report[HOP_FINDINGS]] == [
        ("ingested", "exactly-once"),
        ("relayed", "at-least-once"),
        ("egress", "effectively-exactly-once"),
    ]
    assert report[COUNTS].lost == 0 and hops["relayed"].copies.made_here > 0
    assert hops["egress"].copies.extra_in_state == 0 and hops["egress"].copies.absorbed > 0
