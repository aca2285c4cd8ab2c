"""Telling two drivers' writes apart (harness/checker/checks/zombies.py) from the brokers' producer of each batch
(harness/evidence/producers.py): a log segment's batches read back, and each copy placed by its offset."""

from __future__ import annotations

import struct

import pandas as pd

from harness.checker.checks.zombies import SECOND, THAWED, UNPLACED, ZOMBIE, Zombie, attribute
from harness.evidence.producers import log_batches


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
    assert list(log_batches(segment)) == [(0, 2, 7, 0, False, 1000, 1005), (3, 4, 9, 0, True, 2000, 2005)]


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
