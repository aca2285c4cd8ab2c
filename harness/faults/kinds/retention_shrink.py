"""retention-shrink: stop a streamlet, shrink its input topics' retention until records it has not read are
deleted, restore the retention, restart the streamlet.

The run directory keeps what the checker needs: the streamlet's committed positions when it stopped
(history consumer_position); every record of its input, from the run's recording of the intermediate topics
(caught up before anything is deleted) or the generator's acknowledgement log for the source; and the
log-start offsets when it resumed (history log_start_observed). The records between the committed position
and the log start were deleted unread.
"""

from __future__ import annotations

import time

from harness.cluster import KafkaAdmin
from harness.cluster.admin import offset_rows
from harness.errors import WaitTimeout
from harness.evidence.history import FAULT_INCOMPLETE, LOG_START_OBSERVED, TOPIC_CONFIG_CHANGED
from harness.faults.drivers import record_position, restarted_after, running_driver, stop_driver
from harness.faults.kind import FaultKind, Param
from harness.faults.target import Pipeline
from harness.waiting import wait_for

RETENTION_KEYS = ("retention.ms", "segment.ms")


def shrink_retention(run: Pipeline, streamlet: str, retention_ms: int, timeout_s: float) -> None:
    """Every admin call outlasts broker faults that overlap it for `timeout_s`; the retention is restored and the
    driver restarted whatever happens (undos, retried at the drain when they fail)."""
    running_driver(run, KIND.name, streamlet)
    topics = run.input_topics(streamlet)
    KIND.begun(run, streamlet, topics=topics, retention_ms=retention_ms)
    with restarted_after(run, KIND, streamlet):
        stop_driver(run, streamlet, "SIGTERM")
        committed = record_position(run, streamlet)
        shrunk = {"retention.ms": str(retention_ms), "segment.ms": str(max(100, retention_ms))}
        with run.admin(patience_s=timeout_s) as admin:
            run.wait_recorded()  # every record of an intermediate topic is in the evidence before anything is deleted
            original = {t: {k: admin.topic_config(t).get(k) for k in RETENTION_KEYS} for t in topics}
            with run.undos.undoing(
                KIND.name,
                streamlet,
                f"restore {' and '.join(RETENTION_KEYS)} of {', '.join(topics)}",
                lambda: _restore(run, original, timeout_s),
            ):
                for topic in topics:
                    admin.alter_topic_config(topic, shrunk)
                    run.history.record(TOPIC_CONFIG_CHANGED, topic=topic, configs=shrunk)
                _wait_deleted(admin, streamlet, topics, committed, timeout_s, run)
            log_start = _settled_offsets(admin, topics)
        run.history.record(LOG_START_OBSERVED, streamlet=streamlet, partitions=offset_rows(log_start))


def _wait_deleted(
    admin: KafkaAdmin, streamlet: str, topics: list[str], committed: dict, timeout_s: float, run: Pipeline
) -> None:
    """Until records the streamlet had not read are deleted (fault_incomplete when that does not happen in time)."""

    def unread_records_deleted() -> bool:
        offsets = admin.offsets(topics)
        passed = [o.log_start > committed.get((o.topic, o.partition), 0) for o in offsets]
        behind = [o.log_end > committed.get((o.topic, o.partition), 0) for o in offsets]
        return any(passed) and all(p or not b for p, b in zip(passed, behind))

    try:
        wait_for(
            unread_records_deleted,
            timeout=timeout_s,
            interval=0.5,
            what=f"log-start offsets of {', '.join(topics)} to pass {streamlet}'s committed offsets",
        )
    except WaitTimeout as exc:
        run.history.record(FAULT_INCOMPLETE, kind=KIND.name, target=streamlet, reason=str(exc))


def _restore(run: Pipeline, original: dict[str, dict], timeout_s: float) -> None:
    """Each topic's retention settings as they were (idempotent: an incremental change to the same values)."""
    with run.admin(patience_s=timeout_s) as admin:
        for topic, configs in original.items():
            admin.alter_topic_config(topic, configs)
            run.history.record(TOPIC_CONFIG_CHANGED, topic=topic, configs=configs)


def _settled_offsets(admin: KafkaAdmin, topics: list[str], quiet_s: float = 3.0, timeout_s: float = 30.0):
    """Log-start offsets once the restored retention has taken effect (unchanged for `quiet_s`)."""
    last, since = None, time.monotonic()
    deadline = time.monotonic() + timeout_s
    while True:
        offsets = admin.offsets(topics)
        starts = [o.log_start for o in offsets]
        if starts != last:
            last, since = starts, time.monotonic()
        elif time.monotonic() - since >= quiet_s or time.monotonic() > deadline:
            return offsets
        time.sleep(0.5)


KIND = FaultKind(
    name="retention-shrink",
    on_topics=True,
    target="streamlet",
    play=shrink_retention,
    restarts=True,
    params={"retention_ms": Param(int, 1000, minimum=1), "timeout_s": Param((int, float), 90.0, minimum=1)},
    help="stop a streamlet, shrink its input topics' retention until records it has not read are deleted, restore, "
    "restart",
)
