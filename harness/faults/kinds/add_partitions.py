"""add-partitions: partitions added to a streamlet's input topics while its query runs.

Spark's Kafka source looks for new partitions at every trigger and reads a new one from its earliest offset
(the integration guide: "no data is missed when new topics/partitions are dynamically subscribed"); the
writers upstream (the generator, Spark's producers) start writing to them once their metadata refreshes. The
fault ends once the streamlet's committed batches list the new partitions, and records how long that took;
the run's recording of an intermediate topic follows them too.
"""

from __future__ import annotations

import time

from harness.errors import WaitTimeout
from harness.evidence.history import FAULT_INCOMPLETE, PARTITIONS_ADDED
from harness.faults.drivers import running_driver
from harness.faults.kind import FaultKind, Param
from harness.faults.target import Pipeline
from harness.waiting import wait_for


def add_partitions(run: Pipeline, streamlet: str, add: int, timeout_s: float) -> None:
    running_driver(run, KIND.name, streamlet)
    topics = run.input_topics(streamlet)
    with run.admin(patience_s=timeout_s) as admin:
        before = {t: len(admin.partitions(t)) for t in topics}
        KIND.begun(run, streamlet, topics=topics, partitions_before=before, add=add)
        t0 = time.monotonic()
        for topic, count in before.items():
            admin.add_partitions(topic, count + add)
            run.history.record(PARTITIONS_ADDED, topic=topic, partitions=count + add)
            run.record_new_partitions(topic)
    new = {(t, p) for t, count in before.items() for p in range(count, count + add)}
    try:
        wait_for(
            lambda: new <= set(run.committed_offsets(streamlet)),
            timeout=timeout_s,
            interval=0.5,
            what=f"{streamlet}'s committed batches to list the new partitions",
        )
        picked_up_s = round(time.monotonic() - t0, 1)
    except WaitTimeout as exc:
        run.history.record(FAULT_INCOMPLETE, kind=KIND.name, target=streamlet, reason=str(exc))
        picked_up_s = None
    KIND.ended(run, streamlet, picked_up_s=picked_up_s)


KIND = FaultKind(
    name="add-partitions",
    on_topics=True,
    target="streamlet",
    play=add_partitions,
    recovers=False,
    solo="new partitions need as many live brokers as the topic's replication factor: it fails while a broker fault "
    "is in flight",
    params={"add": Param(int, 2, minimum=1, maximum=64), "timeout_s": Param((int, float), 120.0, minimum=1)},
    help="add partitions to a streamlet's input topics while it runs; ends once its batches read them",
)
