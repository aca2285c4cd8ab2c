"""Talking to any Kafka cluster (embedded or external) through kafka-python.

Topics, topic configs, per-partition log-start/log-end offsets and reading a
topic back: what the runner, the chaos driver and the tests need. Given patience,
every operation outlasts the faults the harness injects: a retriable failure (a broker
killed, paused or electing, a controller moving) drops the client and asks again with
a new one, bootstrapped from every broker, until the deadline.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Iterable, Iterator

from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType, OffsetSpec
from kafka.errors import (
    InvalidPartitionsError,
    KafkaConnectionError,
    KafkaError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)

from harness.cluster.access import KafkaAccess
from harness.errors import HarnessError
from harness.process.ports import accepts

# kafka-python logs every refused connection at ERROR while a broker is down or
# starting; the harness reports those conditions itself.
logging.getLogger("kafka").setLevel(logging.CRITICAL)


@dataclass(frozen=True)
class PartitionOffsets:
    topic: str
    partition: int
    log_start: int
    log_end: int  # the high watermark: next offset a consumer can read

    @property
    def retained(self) -> int:
        return self.log_end - self.log_start


def _retriable(exc: KafkaError) -> bool:
    """A failure a fault explains (a broker down, paused, or electing); an unknown topic is the caller's to judge."""
    return bool(getattr(exc, "retriable", False)) and not isinstance(exc, UnknownTopicOrPartitionError)


def offset_rows(offsets: Iterable[PartitionOffsets]) -> list[list]:
    """[[topic, partition, log_start, log_end], ...]: how offsets are written into the history."""
    return [[o.topic, o.partition, o.log_start, o.log_end] for o in offsets]


class KafkaAdmin:
    """A small facade over KafkaAdminClient for one cluster; close() when done.

    With an access's namespace (a cluster the harness did not create) every create, alter or delete of a topic
    outside it is refused before it is sent: the guard is here, where every change to a topic passes."""

    def __init__(
        self,
        target: KafkaAccess | str,
        request_timeout_ms: int = 10000,
        connect_timeout_ms: int = 10000,
        patience_s: float = 0.0,
    ):
        """`patience_s`: how long each operation (and the first connection) keeps retrying brokers that are down,
        paused or electing a leader; 0 asks once."""
        self.access = KafkaAccess.of(target)
        self.bootstrap_servers = self.access.bootstrap_servers
        self.patience_s = patience_s
        self._timeouts = {"request_timeout_ms": request_timeout_ms, "bootstrap_timeout_ms": connect_timeout_ms}
        self._admin: KafkaAdminClient | None = None
        try:
            self._call(lambda admin: None)
        except KafkaError:
            raise HarnessError(
                f"no Kafka broker reachable at {self.access.describe()}"
                + (f" within {patience_s:.0f}s" if patience_s else "")
            ) from None

    def _client(self) -> KafkaAdminClient:
        if self._admin is None:
            # kafka-python's client starts its IO thread before it bootstraps and keeps it when bootstrapping fails:
            # where no broker even accepts a connection, none is made (retrying would leave one thread per try).
            if not any(
                accepts(int(port), host)
                for host, port in (address.strip().rsplit(":", 1) for address in self.bootstrap_servers.split(","))
            ):
                raise KafkaConnectionError(f"no broker accepts connections at {self.bootstrap_servers}")
            self._admin = KafkaAdminClient(
                **self.access.kafka_python(), client_id="harness-admin", reconnect_backoff_max_ms=1000, **self._timeouts
            )
        return self._admin

    def _drop(self) -> None:
        """Forget the client: the next call bootstraps a new one (fresh metadata, new connections)."""
        admin, self._admin = self._admin, None
        if admin is not None:
            try:
                admin.close()
            except Exception:  # a client whose broker is gone may fail to close; it is dropped either way
                pass

    def _call(self, operation, done_on: tuple[type[KafkaError], ...] = ()):
        """`operation(client)`, retried with backoff on retriable errors for `patience_s`. An error of `done_on`
        after a retry means the earlier attempt took effect (its answer was lost): the call is done."""
        deadline = time.monotonic() + self.patience_s
        delay, retried = 0.2, False
        while True:
            try:
                return operation(self._client())
            except done_on:
                if retried:
                    return None
                raise
            except KafkaError as exc:
                if not _retriable(exc) or time.monotonic() + delay > deadline:
                    raise
            self._drop()
            time.sleep(delay)
            delay, retried = min(delay * 2, 2.0), True

    def _own(self, topic: str, action: str) -> None:
        """Refuse to change a topic outside the run's namespace."""
        namespace = self.access.namespace
        if namespace is not None and not topic.startswith(namespace):
            raise HarnessError(
                f"refusing to {action} topic {topic!r} on {self.bootstrap_servers}: the harness changes only "
                f"its own topics there ({namespace}*)"
            )

    def close(self) -> None:
        self._drop()

    def __enter__(self) -> "KafkaAdmin":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def live_broker_ids(self) -> set[int]:
        """Ids of the brokers the cluster metadata currently lists (registered, not fenced)."""
        brokers = self._call(lambda admin: admin.describe_cluster())["brokers"]
        return {int(b["broker_id"]) for b in brokers if not b.get("is_fenced")}

    def features(self) -> dict[str, dict[str, int]]:
        """The cluster's feature flags as a broker answers ApiVersions: each feature's highest supported level
        (`supported`, what its release can do) and its finalized level (`finalized`, what the cluster runs at)."""
        described = self._call(lambda client: client.describe_features())
        return {
            "supported": {name: f["supported"][1] for name, f in sorted(described.items()) if "supported" in f},
            # a feature no level was finalized for is at level 0 (KIP-584)
            "finalized": {name: f["finalized"][1] if "finalized" in f else 0 for name, f in sorted(described.items())},
        }

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        replication_factor: int = 1,
        configs: dict[str, str] | None = None,
    ) -> None:
        self._own(name, "create")
        spec = {"num_partitions": partitions, "replication_factor": replication_factor, "configs": configs or {}}
        try:
            self._call(
                lambda admin: admin.create_topics({name: spec}, wait_for_metadata=True),
                done_on=(TopicAlreadyExistsError,),
            )
        except KafkaError as exc:
            raise HarnessError(f"creating topic {name!r} failed: {exc}") from None

    def add_partitions(self, topic: str, total: int) -> None:
        """Grow `topic` to `total` partitions (Kafka never removes any)."""
        from kafka.admin import NewPartitions

        self._own(topic, "add partitions to")
        try:
            self._call(
                lambda admin: admin.create_partitions({topic: NewPartitions(total_count=total)}),
                done_on=(InvalidPartitionsError,),
            )
        except KafkaError as exc:
            raise HarnessError(f"adding partitions to topic {topic!r} failed: {exc}") from None

    def delete_topic(self, topic: str) -> None:
        self._own(topic, "delete")
        try:
            self._call(
                lambda admin: admin.delete_topics([topic], timeout_ms=30000), done_on=(UnknownTopicOrPartitionError,)
            )
        except KafkaError as exc:
            raise HarnessError(f"deleting topic {topic!r} failed: {exc}") from None

    def topics(self) -> set[str]:
        return set(self._call(lambda admin: admin.list_topics()))

    def unhealthy_partitions(self) -> list[str]:
        """Every partition of the cluster without a leader or with a replica out of sync, one line each."""
        found = []
        for topic in self._call(lambda admin: admin.describe_topics()):
            for p in topic.get("partitions") or []:
                where = f"{topic['name']}[{p['partition_index']}]"
                if p["leader_id"] < 0:
                    found.append(f"{where} has no leader")
                elif len(p["isr_nodes"]) < len(p["replica_nodes"]):
                    found.append(f"{where} is under-replicated ({len(p['isr_nodes'])} of {len(p['replica_nodes'])})")
        return found

    def replication_factor(self, topic: str, settle_s: float = 5.0) -> int:
        return max(len(p["replica_nodes"]) for p in self._described(topic, settle_s)["partitions"])

    def partitions(self, topic: str, settle_s: float = 5.0) -> list[int]:
        """The topic's partition numbers."""
        return sorted(p["partition_index"] for p in self._described(topic, settle_s)["partitions"])

    def _described(self, topic: str, settle_s: float) -> dict:
        """The topic's description. On several brokers, one may not know a topic created a moment ago (its
        metadata is still on its way): an unknown topic, or one without partitions yet, is asked about again
        for `settle_s`."""
        deadline = time.monotonic() + settle_s
        while True:
            described = self._call(lambda admin: admin.describe_topics([topic]))
            if described and not described[0].get("error_code") and described[0]["partitions"]:
                return described[0]
            if time.monotonic() > deadline:
                raise HarnessError(f"topic {topic!r} does not exist on {self.bootstrap_servers}")
            time.sleep(0.2)

    def alter_topic_config(self, topic: str, configs: dict[str, str | None]) -> None:
        """Set topic configs incrementally (other overrides stay as they are); None removes an override."""
        self._own(topic, "alter the configs of")
        entries = {k: (AlterConfigOp.DELETE, None) if v is None else str(v) for k, v in configs.items()}
        resource = ConfigResource(ConfigResourceType.TOPIC, topic, configs=entries)
        try:
            self._call(lambda admin: admin.alter_configs([resource], incremental=True))
        except KafkaError as exc:
            raise HarnessError(f"altering configs of topic {topic!r} failed: {exc}") from None

    def topic_config(self, topic: str) -> dict[str, str]:
        """The topic's overridden configs (those not at their defaults)."""
        result = self._call(lambda admin: admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)]))
        entries = result["topic"][topic] if isinstance(result, dict) else {}
        return {k: (v["value"] if isinstance(v, dict) else v) for k, v in entries.items()}

    def offsets(self, topics: Iterable[str], settle_s: float = 5.0) -> list[PartitionOffsets]:
        """Log-start and log-end (high watermark) offsets of every partition of `topics`. A partition's leader may
        not know a topic created a moment ago yet (as in partitions()): it is asked again for `settle_s`."""
        tps = [TopicPartition(t, p) for t in topics for p in self.partitions(t)]
        deadline = time.monotonic() + settle_s
        while True:
            try:
                start = self._call(lambda admin: admin.list_partition_offsets({tp: OffsetSpec.EARLIEST for tp in tps}))
                end = self._call(lambda admin: admin.list_partition_offsets({tp: OffsetSpec.LATEST for tp in tps}))
                break
            except UnknownTopicOrPartitionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        return [PartitionOffsets(tp.topic, tp.partition, start[tp].offset, end[tp].offset) for tp in tps]


def read_topic(target: KafkaAccess | str, topic: str, timeout: float = 30.0) -> Iterator:
    """Every record retained in `topic`, from log-start up to the log-end seen at the call."""
    with KafkaAdmin(target) as admin:
        ends = {TopicPartition(o.topic, o.partition): o.log_end for o in admin.offsets([topic])}
    consumer = KafkaConsumer(**KafkaAccess.of(target).kafka_python(), enable_auto_commit=False, group_id=None)
    try:
        consumer.assign(list(ends))
        consumer.seek_to_beginning(*ends)
        deadline = time.monotonic() + timeout
        # Positions, not record offsets, tell when a partition is done: transaction
        # markers occupy offsets that are never returned as records.
        while any(consumer.position(tp) < end for tp, end in ends.items()):
            if time.monotonic() > deadline:
                raise HarnessError(f"reading topic {topic!r} timed out after {timeout:.0f}s")
            for tp, records in consumer.poll(timeout_ms=500).items():
                yield from (r for r in records if r.offset < ends[tp])
    finally:
        consumer.close()
