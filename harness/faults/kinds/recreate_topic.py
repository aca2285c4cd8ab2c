"""recreate-topic: the source topic deleted and created again (same partitions, replication and configs) under
the running streamlet that reads it.

The new topic's offsets start at 0 again, below what the query has read. Spark's Kafka source reports this as
data loss ("offset was changed from X to Y"): with failOnDataLoss=true the query stops; with false it moves on
from the new topic's end offsets, so what the old topic held unread and what the new one received before
that batch are skipped. The history keeps what the checker needs: when the topic was deleted and created
again, and the offsets the streamlet had committed at the deletion (topic_recreated).

Only the workload's source topic can be re-created: an intermediate topic is recorded by offset
(topics/<topic>.jsonl), and offsets that start again would mix two topics in one recording.
"""

from __future__ import annotations

import time

from harness.cluster import KafkaAdmin
from harness.errors import HarnessError, WaitTimeout
from harness.evidence.history import FAULT_INCOMPLETE, TOPIC_RECREATED
from harness.faults.drivers import running_driver
from harness.faults.kind import FaultKind, Param
from harness.faults.target import Pipeline
from harness.waiting import wait_for


def recreate_topic(run: Pipeline, streamlet: str, timeout_s: float) -> None:
    running_driver(run, KIND.name, streamlet)
    topics = run.input_topics(streamlet)  # the source topic: the scenario parser allows only an ingress as target
    KIND.begun(run, streamlet, topics=topics)
    with run.admin(patience_s=timeout_s) as admin:
        shape = {t: (len(admin.partitions(t)), admin.replication_factor(t), admin.topic_config(t)) for t in topics}
        read_to = run.committed_offsets(streamlet)
        deleted_ms = int(time.time() * 1000)
        # the undo: whatever happens, the topics exist again (the pipeline cannot be whole without them)
        with run.undos.undoing(
            KIND.name, streamlet, f"create {', '.join(topics)} again", lambda: _create_missing(run, shape, timeout_s)
        ):
            for topic in topics:
                admin.delete_topic(topic)
            wait_for(
                lambda: not set(topics) & admin.topics(),
                timeout=timeout_s,
                interval=0.2,
                what=f"{', '.join(topics)} to be deleted",
            )
            for topic, (partitions, replication, config) in shape.items():
                _create_when_gone(admin, topic, partitions, replication, config, timeout_s)
            run.history.record(
                TOPIC_RECREATED,
                streamlet=streamlet,
                topics=topics,
                deleted_ms=deleted_ms,
                created_ms=int(time.time() * 1000),
                read_to=[[t, p, o] for (t, p), o in sorted(read_to.items()) if t in topics],
            )
    try:
        wait_for(
            lambda: streamlet in run.failed or _went_back(run.committed_offsets(streamlet), read_to),
            timeout=timeout_s,
            interval=0.5,
            what=f"{streamlet}'s committed offsets to follow the new topic",
        )
        outcome = "query failed" if streamlet in run.failed else "offsets went back"
    except WaitTimeout as exc:
        run.history.record(FAULT_INCOMPLETE, kind=KIND.name, target=streamlet, reason=str(exc))
        outcome = None
    KIND.ended(run, streamlet, outcome=outcome)


def _create_missing(run: Pipeline, shape: dict, timeout_s: float) -> None:
    with run.admin(patience_s=timeout_s) as admin:
        for topic in sorted(set(shape) - admin.topics()):
            _create_when_gone(admin, topic, *shape[topic], timeout_s)


def _create_when_gone(
    admin: KafkaAdmin, topic: str, partitions: int, replication: int, config: dict, timeout_s: float
) -> None:
    """Create the topic again; the brokers may still be removing the old one for a moment after it is unlisted."""

    def created() -> bool:
        try:
            admin.create_topic(topic, partitions, replication, config)
            return True
        except HarnessError:
            return False

    wait_for(created, timeout=timeout_s, interval=0.5, what=f"topic {topic} to be created again")


def _went_back(committed: dict[tuple[str, int], int], read_to: dict[tuple[str, int], int]) -> bool:
    return any(committed.get(tp, offset) < offset for tp, offset in read_to.items())


KIND = FaultKind(
    name="recreate-topic",
    on_topics=True,
    target="ingress",
    play=recreate_topic,
    recovers=False,
    solo="creating the topic again needs as many live brokers as its replication factor, and the checker places a "
    "re-created source's records by send order, which another fault on the source in the same moments can blur",
    params={"timeout_s": Param((int, float), 120.0, minimum=1)},
    help="delete the source topic under the streamlet reading it and create it again (offsets start at 0)",
)
