"""The recorder of the intermediate topics on a real broker: a consumer that makes no progress while behind is
replaced at its positions, and the recording stays exact (every record once, in offset order)."""

from __future__ import annotations

import json

import pytest
from kafka import KafkaProducer

from harness.cluster import EmbeddedCluster
from harness.cluster.follow import PartitionRecorder
from harness.errors import HarnessError

pytestmark = pytest.mark.e2e


def _send(bootstrap: str, first: int, count: int) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    for i in range(first, first + count):
        producer.send("t", value=json.dumps({"i": i}).encode(), partition=i % 2)
    producer.flush()
    producer.close()


def test_a_stalled_recorder_is_renewed_and_records_every_record_once(tmp_path):
    cluster = EmbeddedCluster.create(tmp_path / "cluster", brokers=1)
    with cluster:
        cluster.start()
        with cluster.admin() as admin:
            admin.create_topic("t", partitions=2)
        _send(cluster.bootstrap_servers, 0, 100)
        ends = {("t", 0): 50, ("t", 1): 50}
        recorder = PartitionRecorder(cluster.client_access(), {("t", 0): 0, ("t", 1): 0}, tmp_path / "topics")
        try:
            # Its thread not started yet, the recorder cannot move: a stall, which renews its consumer.
            with pytest.raises(HarnessError, match="not caught up with the log end after 3s"):
                recorder.wait_caught_up(ends, timeout_s=3, stall_s=1)
            assert recorder.renewals >= 1
            recorder.start()
            recorder.wait_caught_up(ends, timeout_s=30)
            recorder.renew()  # mid-stream: the new consumer goes on from the same positions
            _send(cluster.bootstrap_servers, 100, 100)
            recorder.wait_caught_up({("t", 0): 100, ("t", 1): 100}, timeout_s=30)
        finally:
            recorder.stop()
    lines = [json.loads(line) for line in (tmp_path / "topics" / "t.jsonl").open()]
    assert sorted(line["value"]["i"] for line in lines) == list(range(200))
    for partition in (0, 1):
        assert [line["offset"] for line in lines if line["partition"] == partition] == list(range(100))
    assert recorder.renewals >= 2
