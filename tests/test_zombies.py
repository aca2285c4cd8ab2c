"""Telling two drivers' writes apart (harness/checker/checks/zombies.py) from the brokers' producer of each batch
(harness/evidence/producers.py): a log segment's batches read back, and each copy placed by its offset."""

from __future__ import annotations

import re
import struct
import subprocess

import pandas as pd
from confluent_kafka import Consumer, Producer, TopicPartition

from contract.scratch import clear, keep_present
from harness.checker.checks.zombies import SECOND, THAWED, UNPLACED, ZOMBIE, Zombie, attribute
from harness.cluster import EmbeddedCluster
from harness.evidence.producers import log_batches, read_producers, record_producers
from harness.jars import kafka_classpath
from harness.waiting import wait_for


def _batch(base: int, count: int, producer: int, first_ms: int, transactional: bool = False) -> bytes:
    """A record batch (format v2) with `count` empty records: only its header matters here."""
    body = struct.pack(
        ">ibihiqqqhii", 0, 2, 0, 0x10 if transactional else 0, count - 1, first_ms, first_ms + 5, producer, 0, 0, count
    )
    records = b"\x00" * (7 * count)
    return struct.pack(">qi", base, len(body) + len(records)) + body + records


def test_a_log_segments_batches_are_read_with_their_producer_and_a_cut_one_is_left(tmp_path):
    segment = tmp_path / "00000000000000000000.log"
    whole = _batch(0, 3, 7, 1000) + _batch(3, 2, 9, 2000, transactional=True)
    segment.write_bytes(whole + _batch(5, 4, 9, 3000)[:30])  # the last one cut mid-write
    read = [
        (b.base_offset, b.last_offset, b.producer_id, b.transactional, b.base_ms, b.max_ms)
        for b in log_batches(segment)
    ]
    assert read == [(0, 2, 7, False, 1000, 1005), (3, 4, 9, True, 2000, 2005)]


def _producers(rows):
    columns = ["topic", "partition", "base_offset", "last_offset", "producer_id", "base_ms", "max_ms"]
    return pd.DataFrame([("t", *r) for r in rows], columns=columns)


def test_each_copy_is_the_zombies_the_second_drivers_or_the_thawed_zombies_by_its_batch():
    """The zombie (producer 1) wrote before its freeze at 100 and again after its thaw at 300, the second driver
    (producer 2) from 150; a copy at an offset no batch holds is unplaced."""
    zombie = Zombie(1, "job", frozen_ms=100, second_ms=150, thawed_ms=300)
    batches = _producers([(0, 0, 4, 1, 10, 50), (0, 5, 9, 2, 160, 200), (0, 10, 11, 1, 310, 320)])
    copies = pd.DataFrame(
        {"partition": [0, 0, 0, 0, 1], "offset": [2, 7, 10, 11, 0], "timestamp_ms": [20, 170, 310, 320, 5]}
    )
    assert attribute(copies, batches, zombie).tolist() == [ZOMBIE, SECOND, THAWED, THAWED, UNPLACED]


def _log_end(cluster: EmbeddedCluster) -> int:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "end", "log_level": 0})
    try:
        return consumer.get_watermark_offsets(TopicPartition("t", 0), timeout=10)[1]
    finally:
        consumer.close()


def test_a_real_brokers_segments_give_each_batchs_producer_and_each_transactions_marker(tmp_path):
    """A real broker's log after an idempotent write, a committed and an aborted transaction: producers.csv names
    each batch's producer and each marker as Kafka's own DumpLogSegments prints them."""
    cluster = EmbeddedCluster.create(tmp_path / "cluster", brokers=1)
    with cluster:
        cluster.start(timeout=60)
        with cluster.admin() as admin:
            admin.create_topic("t")
        common = {"bootstrap.servers": cluster.bootstrap_servers, "log_level": 0}
        plain = Producer({**common, "enable.idempotence": True})
        plain.produce("t", b"a", partition=0)
        plain.flush(30)
        txn = Producer({**common, "transactional.id": "test-txn"})
        txn.init_transactions(30)
        for ending in (txn.commit_transaction, txn.abort_transaction):
            txn.begin_transaction()
            txn.produce("t", b"b", partition=0)
            txn.flush(30)
            ending(30)
        # the coordinator writes the last marker after the abort returns: wait until the log's end is past it
        wait_for(lambda: _log_end(cluster) == 5, timeout=30, what="the abort's marker")
        record_producers(cluster.workdir, {"t"}, tmp_path / "producers.csv")
        (segment,) = (cluster.workdir).glob("node-*/data/t-0/*.log")
        dumped = subprocess.run(
            [
                "java",
                "-cp",
                kafka_classpath(),
                "org.apache.kafka.tools.DumpLogSegments",
                "--print-data-log",
                "--files",
                str(segment),
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    read = read_producers(tmp_path / "producers.csv")
    told = [
        (int(b.base_offset), int(b.producer_id), int(b.producer_epoch), bool(b.transactional), b.control)
        for b in read.itertuples()
    ]
    printed = []
    for line in dumped.splitlines():
        if line.startswith("baseOffset:"):
            field = dict(re.findall(r"(\w+): (\S+)", line))
            transactional = field["isTransactional"] == "true"
            printed.append(
                (int(field["baseOffset"]), int(field["producerId"]), int(field["producerEpoch"]), transactional, "")
            )
        elif "endTxnMarker:" in line:
            printed[-1] = (*printed[-1][:4], re.search(r"endTxnMarker: (\w+)", line).group(1).lower())
    assert told == printed
    assert [c for *_, c in told] == ["", "", "commit", "", "abort"]


def test_a_drivers_start_clears_its_scratch_but_what_a_zombie_beside_it_uses_once(tmp_path):
    scratch = tmp_path / "scratch"
    (scratch / "blockmgr-zombie").mkdir(parents=True)
    (scratch / "spark-zombie.tmp").write_text("x")
    keep_present(scratch)  # the zombie is set aside
    (scratch / "blockmgr-killed").mkdir()
    clear(scratch)  # the second driver starts
    assert sorted(p.name for p in scratch.iterdir()) == ["blockmgr-zombie", "spark-zombie.tmp"]
    clear(scratch)  # a later start, the zombie gone
    assert list(scratch.iterdir()) == []
