"""Broker settings for the embedded KRaft cluster, tuned for fault testing.

Every node runs in combined mode (process.roles=broker,controller) with a
static controller quorum of all nodes: one JVM per node keeps 3 brokers
affordable on 2 cores, and killing one node of three leaves a quorum of two.
"""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.cluster.security import ClusterSecurity


@dataclass(frozen=True)
class NodeSpec:
    """One broker+controller node: its id and the loopback ports it listens on.

    `links` gives each network link (harness.network) a client listener of its own: link -> [listener
    name, the port the broker listens on, the port it advertises: the link's proxy in front of it]."""

    node_id: int
    port: int
    controller_port: int
    host: str = "127.0.0.1"
    links: dict = field(default_factory=dict)
    internal_port: int | None = None  # a secured cluster's inter-broker listener (harness.cluster.security)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


def new_kafka_uuid() -> str:
    """An id in Kafka's own Uuid format (URL-safe base64 of a UUID, no padding): a cluster's, a log directory's.

    Like Kafka's Uuid.randomUuid, never one starting with '-', which command
    line parsers would take for an option.
    """
    while True:
        candidate = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not candidate.startswith("-"):
            return candidate


def min_insync_replicas(brokers: int) -> int:
    """The embedded cluster's min.insync.replicas: 2 of 3 brokers (one may be down and acks=all still succeeds)."""
    return 2 if brokers >= 3 else 1


def broker_properties(
    node: NodeSpec,
    nodes: list[NodeSpec],
    data_dir: Path,
    security: "ClusterSecurity | None" = None,
    tls_dir: Path | None = None,
) -> dict[str, str]:
    """server.properties for one node. Fault-testing choices are commented. With `security` the clients'
    listeners are secured and inter-broker traffic has a listener of its own (harness.cluster.security)."""
    count = len(nodes)
    voters = ",".join(f"{n.node_id}@{n.host}:{n.controller_port}" for n in nodes)
    links = node.links.values()  # inter-broker and controller traffic keep their own listeners, never proxied
    replication = min(3, count)
    min_isr = min_insync_replicas(count)
    client = "CLIENT" if security else "PLAINTEXT"
    client_protocol = security.client_protocol if security else "PLAINTEXT"
    clients = [(client, node.port, node.port)] + [(name, port, proxy) for name, port, proxy in links]
    own = clients + ([("INTERNAL", node.internal_port, node.internal_port)] if security else [])
    protocols = {name: client_protocol for name, _, _ in clients} | (
        {"INTERNAL": "SSL", "CONTROLLER": "SSL"} if security else {"CONTROLLER": "PLAINTEXT"}
    )
    props = {
        "process.roles": "broker,controller",
        "node.id": str(node.node_id),
        "controller.quorum.voters": voters,
        "listeners": ",".join(f"{name}://{node.host}:{port}" for name, port, _ in own)
        + f",CONTROLLER://{node.host}:{node.controller_port}",
        "advertised.listeners": ",".join(f"{name}://{node.host}:{proxy}" for name, _, proxy in own),
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "INTERNAL" if security else "PLAINTEXT",
        "listener.security.protocol.map": ",".join(f"{name}:{protocol}" for name, protocol in protocols.items()),
        "log.dirs": str(data_dir),
        # Topics are created explicitly by the harness, with their own settings.
        "auto.create.topics.enable": "false",
        "num.partitions": "1",
        "default.replication.factor": str(replication),
        "min.insync.replicas": str(min_isr),
        "offsets.topic.replication.factor": str(replication),
        "offsets.topic.num.partitions": "5",
        "transaction.state.log.replication.factor": str(replication),
        "transaction.state.log.min.isr": str(min_isr),
        "transaction.state.log.num.partitions": "5",
        "share.coordinator.state.topic.replication.factor": str(replication),
        "share.coordinator.state.topic.min.isr": str(min_isr),
        "unclean.leader.election.enable": "false",
        # Retention is enforced within about a second, and deleted segments go
        # within 0.1 s, so a retention-shrink fault shows its effect quickly. (A
        # segment delay of 0 kept both scheduler threads of an idle broker waking every
        # millisecond: 2.6 CPU seconds in 30 s, 0.8 with 100 ms.)
        "log.retention.check.interval.ms": "1000",
        "log.segment.delete.delay.ms": "100",
        "log.initial.task.delay.ms": "0",
        "file.delete.delay.ms": "0",
        # Consumers (Spark's driver) join groups without the default 3 s wait.
        "group.initial.rebalance.delay.ms": "0",
        # Small enough for 2 cores.
        "num.network.threads": "2",
        "num.io.threads": "2",
        "num.recovery.threads.per.data.dir": "1",
        "background.threads": "2",
        "log.cleaner.threads": "1",
        "log.cleaner.dedupe.buffer.size": str(8 * 1024 * 1024),
    }
    if security:
        props.update(security.broker_properties(node.node_id, tls_dir, [name for name, _, _ in clients]))
    return props


def render_properties(props: dict[str, str]) -> str:
    return "".join(f"{key}={value}\n" for key, value in props.items())


# The brokers' logging (to stdout, captured per node), one file for the processes and the Kafka image
# (docker/kafka/Dockerfile copies it).
LOG4J2_FILE = Path(__file__).with_name("log4j2.properties")
