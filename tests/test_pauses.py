"""What the report says of a paused driver (harness/checker/checks/pauses.py): the timeouts its pause outlasted at
the job's own settings, read from the Kafka clients' configuration its log holds, and the brokers' view of its
producers from producers.csv."""

from __future__ import annotations

import pandas as pd

from harness.checker.checks.pauses import TIMEOUTS, Pause, broker_view, client_settings, outlasted
from harness.evidence.producers import PRODUCER_COLUMNS

LOG = """26/12/04 01:02:03 INFO ProducerConfig: ProducerConfig values:
\tacks = -1
\tcompression.lz4.level = 9
\trequest.timeout.ms = 30000
\tssl.enabled.protocols = [TLSv1.2, TLSv1.3]
\ttransaction.timeout.ms = 10000
\ttransactional.id = null

26/12/04 01:02:04 INFO ProducerConfig: ProducerConfig values:
\trequest.timeout.ms = 5000
26/12/04 01:02:06 INFO MicroBatchExecution: a batch
"""


def test_the_first_producers_settings_are_read_from_the_log():
    assert client_settings(LOG) == {
        "acks": "-1",
        "compression.lz4.level": "9",
        "request.timeout.ms": "30000",
        "ssl.enabled.protocols": "[TLSv1.2, TLSv1.3]",
        "transaction.timeout.ms": "10000",
        "transactional.id": "null",
    }
    assert client_settings("26/12/04 01:02:03 WARN NativeCodeLoader: no hadoop\n") == {}


def test_a_pause_outlasts_the_jobs_own_timeouts_and_kafkas_defaults_where_it_set_none():
    effect = {name: what for name, (_, what) in TIMEOUTS.items()}
    assert outlasted(35_000, client_settings(LOG)) == [
        ("transaction.timeout.ms", 10_000, True, effect["transaction.timeout.ms"]),
        ("request.timeout.ms", 30_000, True, effect["request.timeout.ms"]),
    ]
    assert [name for name, *_ in outlasted(35_000, {})] == ["request.timeout.ms"]
    assert [(name, own) for name, _, own, _ in outlasted(70_000, {})] == [
        ("request.timeout.ms", False),
        ("transaction.timeout.ms", False),
    ]
    assert outlasted(1_000, {}) == []


def _batches(rows):
    """producers.csv rows: (producer id, epoch, first ms, last ms, control) on one partition, in offset order."""
    filled = [
        ("t", 0, i * 10, i * 10 + 9, p, e, False, first, last, c) for i, (p, e, first, last, c) in enumerate(rows)
    ]
    return pd.DataFrame(filled, columns=PRODUCER_COLUMNS)


def test_the_brokers_view_tells_kept_from_new_producers_and_names_a_marker_written_while_frozen():
    """Producers 1 and 2 wrote before the freeze at 100; a coordinator aborted 2's transaction at 150, while frozen;
    after the thaw at 200 producer 1 wrote on, 2 did not, and 3 is new; one batch of 1 is stamped at 120, frozen."""
    pause = Pause(1, "job", paused_ms=100, resumed_ms=200, log_bytes=0, running=True)
    batches = _batches(
        [
            (1, 0, 10, 20, ""),
            (2, 0, 30, 40, ""),
            (1, 0, 120, 120, ""),
            (2, 0, 150, 150, "abort"),
            (1, 0, 210, 220, ""),
            (3, 0, 230, 240, ""),
            (4, 0, 160, 160, "commit"),
        ]
    )
    assert broker_view(batches, pause) == {
        "before": [1, 2],
        "written_frozen": 1,
        "kept": {1: 0},
        "new": {3: 0},
        "markers": ["abort of producer 2"],
    }
