"""The run's Kafka: the brokers it starts (processes or containers) or the cluster one runs, the network links'
proxy in front of them, the topics it creates, and admin clients that outlast the run's own faults."""

from __future__ import annotations

import secrets
import time
from pathlib import Path

from kafka.errors import KafkaError

from harness.cluster import EmbeddedCluster, KafkaAdmin, releases
from harness.cluster.access import KafkaAccess
from harness.cluster.security import ClusterSecurity
from harness.cluster.truststore import truststore_pem
from harness.docker.cluster import ContainerCluster
from harness.docker.foreign import ForeignBrokers
from harness.errors import HarnessError
from harness.evidence.history import CLUSTER, PROCESS_STARTED, TOPIC_CREATED
from harness.network import NetworkLinks
from harness.network.links import PROCESS as PROXY
from harness.process import ManagedProcess
from harness.runner.shared import RunShared
from harness.runner.topology import EXTERNAL_TOPIC_PREFIX, Topology
from harness.scenario import Scenario
from harness.scenario.world import broker_host_names
from pipelines.kafka_security import KafkaSecurity

METADATA_VERSION = "metadata.version"
ADMIN_PATIENCE_S = 120.0  # longer than a broker fault's default outage plus its restart


class KafkaService:
    """The brokers of one run, from their start to their end."""

    def __init__(self, shared: RunShared, topology: Topology):
        self.shared = shared
        self.topology = topology
        self.cluster: EmbeddedCluster | None = None  # the Kafka cluster the harness started (processes or containers)
        self.foreign_brokers: ForeignBrokers | None = None  # cluster.docker.containers of a cluster one runs
        self.links = sorted(
            {r.target for r in shared.scenario.faults if r.fault.target == "link"}
        )  # proxied network links
        self.wire_links = {r.target for r in shared.scenario.faults if r.fault.reads_wire}  # read as Kafka's frames
        self.network: NetworkLinks | None = None
        self.kafka: KafkaAccess | None = None  # where the brokers are and how to speak to them (start)

    def processes(self) -> list[ManagedProcess]:
        return self.cluster.processes() if self.cluster else []

    def admin(self, patience_s: float = ADMIN_PATIENCE_S) -> KafkaAdmin:
        """An admin client of the run's cluster that outlasts the run's own faults for `patience_s` (a broker down or
        paused, a leader moving); on a cluster one runs, it changes only the run's own topics."""
        return KafkaAdmin(self.kafka, patience_s=patience_s)

    def broker(self, target: str):
        """`broker-2`: a broker the harness started, or the second container cluster.docker.containers lists."""
        node = int(target.split("-", 1)[1])
        if self.cluster is not None:
            return self.cluster.broker(node)
        if self.foreign_brokers is not None:
            return self.foreign_brokers.broker(node)
        raise HarnessError(f"{target}: this run has no broker it can fault")

    def client_access(self, name: str) -> KafkaAccess:
        """Where a streamlet's driver (or the generator) finds the brokers: its network link's proxy when a
        network fault targets it, the brokers themselves otherwise."""
        if self.network is not None and name in self.network.links:
            return self.kafka.at(self.network.bootstrap(name))
        return self.kafka

    def external_access(self) -> KafkaAccess:
        """A cluster one runs; changes to topics are held to the run's namespace."""
        return external_access(
            self.shared.scenario, f"{EXTERNAL_TOPIC_PREFIX}{self.topology.run_id}.", self.shared.layout.root
        )

    def start(self) -> None:
        if self.shared.scenario.cluster.bootstrap_servers:
            self._reach_external()
            return
        t0 = time.monotonic()
        self._start_brokers()
        self.shared.say(
            f"Kafka {self.cluster.kafka_version}: {len(self.cluster.brokers)} broker(s) at {self.kafka.describe()} "
            f"({time.monotonic() - t0:.1f}s)"
        )
        if self.links:
            self._start_links()

    def _reach_external(self) -> None:
        spec = self.shared.scenario.cluster
        self.kafka = self.external_access()
        self.kafka.check()
        self.shared.say(
            f"external cluster {self.kafka.describe()}: only topics named {self.kafka.namespace}* are created, "
            f"changed or deleted (any other is refused), and consumer groups are the run's own"
        )
        if spec.containers:
            self.foreign_brokers = ForeignBrokers(spec.containers, self.kafka, self.shared.layout.log_dir)
            self.shared.say(
                f"broker faults touch only these containers, and leave them running: {self.foreign_brokers.describe()}"
            )
        self.shared.history.record(
            CLUSTER,
            kind="external",
            bootstrap_servers=spec.bootstrap_servers,
            security=self.kafka.describe(),
            containers=list(spec.containers),
        )

    def _start_brokers(self) -> None:
        spec, client = self.shared.scenario.cluster, self.shared.scenario.kafka
        mechanism = (client and client.sasl_mechanism) or "SCRAM-SHA-256"
        names = broker_host_names(self.shared.scenario.blueprint.streamlets)
        security = ClusterSecurity(spec.security, mechanism, names) if spec.security else None
        if spec.docker:
            from harness.docker import engine, images

            image = spec.docker_image or images.ensure_kafka(
                engine.client(), say=self.shared.say, version=spec.kafka_version
            )
            self.cluster = ContainerCluster.create(
                self.shared.layout.cluster,
                brokers=spec.brokers,
                links=self.links,
                security=security,
                image=image,
                run_id=self.topology.run_id,
                kafka_version=spec.kafka_version,
                features=spec.kafka_features,
            )
            self.shared.say(f"brokers in containers of {image} (host network; removed at the end)")
        else:
            self.cluster = EmbeddedCluster.create(
                self.shared.layout.cluster,
                brokers=spec.brokers,
                links=self.links,
                security=security,
                kafka_version=spec.kafka_version,
                features=spec.kafka_features,
            )
        self.cluster.start()
        for broker in self.cluster.brokers:
            self.shared.history.record(PROCESS_STARTED, process=broker.name, pid=broker.pid, role="broker")
        self.kafka = self.cluster.client_access()
        if security is not None and security.mode == "sasl_ssl":
            # The scenario's user, or one of the run's own whose password exists only in memory.
            username = client.username if client else "harness"
            password = client.password.resolve("kafka.password") if client else secrets.token_urlsafe(24)
            self.cluster.add_scram_user(username, password)
            self.kafka = self.cluster.client_access(username, password)

    def _start_links(self) -> None:
        self.network = NetworkLinks(
            self.shared.supervisor,
            self.shared.layout.network_control,
            self.shared.layout.log(PROXY),
            [{**route, "wire": route["link"] in self.wire_links} for route in self.cluster.link_routes()],
            self.shared.layout.kafka_requests if self.wire_links else None,
        ).start()
        self.shared.history.record(
            PROCESS_STARTED,
            process=PROXY,
            pid=self.network.process.pid,
            role="network-proxy",
            links={link: self.client_access(link).bootstrap_servers for link in self.links},
        )
        self.shared.say(
            "network links through the proxy: "
            + ", ".join(f"{link} at {self.client_access(link).bootstrap_servers}" for link in self.links)
        )

    def create_topics(self) -> None:
        brokers = len(self.cluster.brokers) if self.cluster else None
        with self.admin() as admin:
            for spec in self.topology.all_topics():
                replication = min(spec.replication, brokers) if brokers else spec.replication
                name = self.topology.topic_name(spec)
                admin.create_topic(name, spec.partitions, replication, spec.config)
                self.shared.history.record(
                    TOPIC_CREATED, topic=name, partitions=spec.partitions, replication=replication, config=spec.config
                )

    def log_ends(self) -> dict[tuple[str, int], int]:
        topics = (self.topology.topic_name(t) for t in self.topology.all_topics())
        with self.admin() as admin:
            return {(o.topic, o.partition): o.log_end for o in admin.offsets(topics)}

    def log_starts(self, topics: list[str]) -> dict[tuple[str, int], int]:
        with self.admin() as admin:
            return {(o.topic, o.partition): o.log_start for o in admin.offsets(topics)}

    def version(self) -> dict:
        """The brokers' version for versions.json (and the image's, in containers), and the feature levels their
        cluster runs at, asked of them: a cluster one runs gets its release line from the highest metadata.version
        its brokers support (None where they did not answer)."""
        features = self._features()
        supported = features["supported"].get(METADATA_VERSION) if features else None
        reported = releases.line_reporting(supported) if supported is not None else None
        return {
            "kafka_broker": self.cluster.kafka_version if self.cluster else reported,
            "kafka_cluster": "embedded" if self.cluster else "external",
            **({"kafka_image": self.cluster.image} if isinstance(self.cluster, ContainerCluster) else {}),
            "kafka_features": features["finalized"] if features else None,
            "kafka_supported": features["supported"] if features else None,
        }

    def _features(self) -> dict | None:
        try:
            with self.admin(patience_s=20.0) as admin:
                return admin.features()
        except (HarnessError, KafkaError) as exc:
            self.shared.say(f"the brokers' feature levels unknown: {exc}")
            return None

    def close(self) -> None:
        if self.cluster is not None:
            self.cluster.close()
            self.cluster.forget_keys()
        if self.foreign_brokers is not None:
            self.foreign_brokers.close()


def external_access(scenario: Scenario, namespace: str | None, workdir: Path) -> KafkaAccess:
    """How to reach the cluster one runs that `scenario` names (cluster.bootstrap_servers), as its kafka: section
    says, its secrets read now (a truststore's certificates written to `workdir`); topic changes held to
    `namespace`."""
    spec, client = scenario.cluster, scenario.kafka
    if client is None:
        return KafkaAccess(spec.bootstrap_servers, namespace=namespace)
    ca_file = client.ca_file
    if client.truststore:
        password = (
            client.truststore_password.resolve("kafka.truststore.password") if client.truststore_password else None
        )
        ca_file = str(truststore_pem(Path(client.truststore), password, workdir / "kafka-truststore.pem"))
    security = KafkaSecurity(
        client.security_protocol, client.sasl_mechanism, client.username, ca_file, client.keystore_file
    )
    password = client.password.resolve("kafka.password") if client.password else None
    return KafkaAccess(spec.bootstrap_servers, security, password, namespace=namespace)
