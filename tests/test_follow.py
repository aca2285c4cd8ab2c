"""The recorder of the intermediate topics on a real broker: a consumer that makes no progress while behind is
replaced at its positions, and the recording stays exact (every record once, in offset order), as JSON lines and in
columnar form."""

from __future__ import annotations

import json

import pytest
from kafka import KafkaProducer

from contract.segments import read_segments
from harness.cluster import EmbeddedCluster
from harness.cluster.follow import PartitionRecorder
from harness.errors import HarnessError

pytestmark = pytest.mark.e2e


def _send(bootstrap: str, first: int, count: int) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    for i in range(first, first + count):
        producer.send("t", value=json.dumps({"i": i}).encode(), partition=i % 2)
        stamps = {"batches": {"ingress": i // 10}} if i % 3 else {}  # a record without a stamp has it null
        producer.send("c", value=json.dumps({"key": f"k{i % 2}", "seq": i // 2} | stamps).encode(), partition=i % 2)
    producer.flush()
    producer.close()


def test_a_stalled_recorder_is_renewed_and_records_every_record_once(tmp_path):
    cluster = EmbeddedCluster.create(tmp_path / "cluster", brokers=1)
    with cluster:
        cluster.start()
        with cluster.admin() as admin:
            admin.create_topic("t", partitions=2)
            admin.create_topic("c", partitions=2)
        _send(cluster.bootstrap_servers, 0, 100)
        ends = {(t, p): 50 for t in "tc" for p in (0, 1)}
        starts = {(t, p): 0 for t in "tc" for p in (0, 1)}
        recorder = PartitionRecorder(cluster.client_access(), starts, tmp_path / "topics", columnar=frozenset("c"))
        try:
            assert recorder.lag(ends) == 200 and recorder.lag({("other", 0): 10}) == 0  # nothing recorded yet
            # Its thread not started yet, the recorder cannot move: a stall, which renews its consumer.
            with pytest.raises(HarnessError, match="not caught up with the log end after 3s"):
                recorder.wait_caught_up(ends, timeout_s=3, stall_s=1)
            assert recorder.renewals >= 1
            recorder.start()
            recorder.wait_caught_up(ends, timeout_s=30)
            assert recorder.lag(ends) == 0 and recorder.lag({("t", 0): 60}) <= 10
            recorder.renew()  # mid-stream: the new consumer goes on from the same positions
            _send(cluster.bootstrap_servers, 100, 100)
            recorder.wait_caught_up({(t, p): 100 for t in "tc" for p in (0, 1)}, timeout_s=30)
        finally:
            recorder.stop()
    lines = [json.loads(line) for line in (tmp_path / "topics" / "t.jsonl").open()]
    assert sorted(line["value"]["i"] for line in lines) == list(range(200))
    for partition in (0, 1):
        assert [line["offset"] for line in lines if line["partition"] == partition] == list(range(100))
    assert recorder.renewals >= 2
    # The columnar recording (harness/evidence/topics.py): the same records, identity and stamps as columns.
    table, problems = read_segments(tmp_path / "topics" / "c")
    assert problems == [] and not (tmp_path / "topics" / "c.jsonl").exists()
    rows = sorted(zip(*(table[c].to_pylist() for c in ("partition", "offset", "key", "seq", "batch.ingress"))))
    assert rows == sorted((i % 2, i // 2, f"k{i % 2}", i // 2, i // 10 if i % 3 else None) for i in range(200))
