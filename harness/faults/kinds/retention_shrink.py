"""retention-shrink: stop a streamlet, shrink its input topics' retention until records it has not read are
deleted, restore the retention, restart the streamlet.

The run directory keeps what the checker needs: the streamlet's committed positions when it stopped
(history consumer_position); every record of its input from there on, recorded before anything is deleted
and followed while retention is shrunk (at-risk/<streamlet>-<n>/<topic>.jsonl); and the log-start offsets
when it resumed (history log_start_observed, naming that folder). The records at risk below the log start
were deleted unread, on the source or any intermediate topic.
"""

from __future__ import annotations

import time

from harness.cluster import KafkaAdmin
from harness.cluster.admin import offset_rows
from harness.cluster.follow import PartitionRecorder
from harness.errors import WaitTimeout
from harness.faults.drivers import record_position, restart, running_driver, stop_driver
from harness.faults.kind import FaultKind, Param
from harness.faults.target import Pipeline
from harness.waiting import wait_for

RETENTION_KEYS = ("retention.ms", "segment.ms")


def shrink_retention(run: Pipeline, streamlet: str, retention_ms: int = 1000, timeout_s: float = 90.0) -> None:
    running_driver(run, KIND.name, streamlet)
    topics = run.input_topics(streamlet)
    KIND.begun(run, streamlet, topics=topics, retention_ms=retention_ms)
    stop_driver(run, streamlet, "SIGTERM")
    committed = record_position(run, streamlet)
    shrunk = {"retention.ms": str(retention_ms), "segment.ms": str(max(100, retention_ms))}
    at_risk = run.layout.at_risk(streamlet, len(run.layout.at_risk_dirs(streamlet)) + 1)
    with KafkaAdmin(run.bootstrap) as admin:
        offsets = admin.offsets(topics)
        starts = {(o.topic, o.partition): committed.get((o.topic, o.partition), o.log_start) for o in offsets}
        recorder = PartitionRecorder(run.bootstrap, starts, at_risk, run.value_decoders()).start()
        try:
            recorder.wait_caught_up({(o.topic, o.partition): o.log_end for o in offsets})  # kept before anything is deleted
            original = {t: admin.topic_config(t) for t in topics}
            for topic in topics:
                admin.alter_topic_config(topic, shrunk)
                run.history.record("topic_config_changed", topic=topic, configs=shrunk)

            def unread_records_deleted() -> bool:
                offsets = admin.offsets(topics)
                passed = [o.log_start > committed.get((o.topic, o.partition), 0) for o in offsets]
                behind = [o.log_end > committed.get((o.topic, o.partition), 0) for o in offsets]
                return any(passed) and all(p or not b for p, b in zip(passed, behind))

            try:
                wait_for(unread_records_deleted, timeout=timeout_s, interval=0.5,
                         what=f"log-start offsets of {', '.join(topics)} to pass {streamlet}'s committed offsets")
            except WaitTimeout as exc:
                run.history.record("fault_incomplete", kind=KIND.name, target=streamlet, reason=str(exc))
            for topic in topics:
                restored = {k: original[topic].get(k) for k in RETENTION_KEYS}
                admin.alter_topic_config(topic, restored)
                run.history.record("topic_config_changed", topic=topic, configs=restored)
            log_start = _settled_offsets(admin, topics)
            recorder.wait_caught_up({(o.topic, o.partition): o.log_end for o in log_start})
        finally:
            recorder.stop()
    run.history.record("log_start_observed", streamlet=streamlet, partitions=offset_rows(log_start),
                       at_risk=str(at_risk.relative_to(run.layout.root)), at_risk_records=recorder.records)
    restart(run, KIND, streamlet)


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
    name="retention-shrink", target="streamlet", play=shrink_retention, restarts=True,
    params={"retention_ms": Param(int, 1000, minimum=1), "timeout_s": Param((int, float), 90.0, minimum=1)},
    help="stop a streamlet, shrink its input topics' retention until records it has not read are deleted, restore, restart")
