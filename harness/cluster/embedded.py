"""The embedded cluster: real Apache Kafka brokers (KRaft) as local JVM processes.

A cluster lives in one directory:

    DIR/cluster.json          id, Kafka version, nodes and ports
    DIR/log4j2.properties     broker logging (to stdout, captured per node)
    DIR/node-N/server.properties, DIR/node-N/data/, DIR/node-N/broker.log
    DIR/pids/broker-N.json    pid and start time of each running broker
    DIR/tls/                  a secured cluster's CA and certificates (harness.cluster.tls, .security)

Everything needed to stop the brokers is on disk, so `harness cluster down`
works even when the process that ran `up` is gone.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

from kafka.errors import KafkaError

from harness import cds, jars
from harness.cluster import releases, storage, tls
from harness.cluster.access import KafkaAccess
from harness.cluster.admin import KafkaAdmin
from harness.cluster.config import (
    LOG4J2_FILE,
    NodeSpec,
    broker_properties,
    new_kafka_uuid,
    render_properties,
)
from harness.cluster.security import ClusterSecurity
from harness.errors import HarnessError
from harness.jit import jit_options
from harness.process import ManagedProcess, ProcessRecord, Supervisor, accepts, free_ports, stop_all_recorded
from harness.waiting import wait_for

STATE_FILE = "cluster.json"
BROKER_ROLE = "kafka-broker"  # the brokers' class-data-sharing archive (harness.cds)
BROKER_JIT = "HARNESS_BROKER_JIT"  # the brokers' JIT mode (harness.jit)
# How long a broker may take to start and be listed live: a deadline, not a wait. A JVM that starts in seconds
# on an idle machine takes over a minute where other JVMs (Spark drivers, brokers) keep both cores busy.
READY_TIMEOUT_S = 180.0


@dataclass(frozen=True)
class BrokerStatus:
    node_id: int
    address: str
    controller_port: int
    pid: int | None
    state: str  # running | paused | stopped
    log: str


class Broker:
    """One node of the embedded cluster: start, stop, kill, pause, resume, restart."""

    paused_by = "SIGSTOP"  # how pause() freezes it, for the history

    def __init__(self, cluster: "EmbeddedCluster", spec: NodeSpec):
        self.cluster = cluster
        self.spec = spec
        self.process: ManagedProcess | None = None
        pid_file = cluster.pid_dir / f"{self.name}.json"
        if pid_file.exists():
            self.process = ManagedProcess(ProcessRecord.load(pid_file))

    @property
    def name(self) -> str:
        return f"broker-{self.spec.node_id}"

    @property
    def node_id(self) -> int:
        return self.spec.node_id

    @property
    def address(self) -> str:
        return self.spec.address

    @property
    def node_dir(self) -> Path:
        return self.cluster.workdir / f"node-{self.node_id}"

    @property
    def log_path(self) -> Path:
        return self.node_dir / "broker.log"

    @property
    def scratch(self) -> Path:
        """The JVM's java.io.tmpdir: the native libraries it extracts (lz4's) stay with the run, not in /tmp, when
        the broker is killed."""
        return self.node_dir / "tmp"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process and self.process.running() else None

    def running(self) -> bool:
        return bool(self.process and self.process.running())

    def state(self) -> str:
        if not self.running():
            return "stopped"
        return "paused" if self.process.is_paused() else "running"

    def start(self, wait: bool = True, timeout: float = READY_TIMEOUT_S) -> None:
        """Start the broker JVM; with `wait`, return once the cluster lists it as live."""
        if self.running():
            raise HarnessError(f"{self.name} is already running (pid {self.process.pid})")
        classpath = self.cluster.classpath
        self.scratch.mkdir(parents=True, exist_ok=True)  # a cluster made by an older harness has none
        argv = [
            jars.java_executable(),
            *cds.java_options(BROKER_ROLE, classpath),
            *self.cluster.extra_java_options,
            *self.java_arguments(classpath),
        ]
        self.process = self.cluster.supervisor.start(self.name, argv, self.log_path)
        if wait:
            self.cluster.wait_ready(timeout=timeout, node_ids=[self.node_id])

    def wait_ready(self, timeout: float = READY_TIMEOUT_S) -> None:
        """Until the cluster lists this broker as live."""
        self.cluster.wait_ready(timeout=timeout, node_ids=[self.node_id])

    def java_arguments(self, classpath: str) -> list[str]:
        """The broker's JVM settings and main class, wherever its JVM runs (a process here, a container)."""
        # The heap is sized and touched once at start (as Kafka's own guidance fixes -Xms to -Xmx): a broker's
        # memory then follows what it holds, not when G1 chose to grow its heap. With -Xms128m an hour's soak
        # judged broker-3 +11.4% "grown once warm", a heap expanding to its limit after it took over broker-2's
        # partitions at minute 17, flat from minute 21 to the end.
        # Its JIT by HARNESS_BROKER_JIT (harness.jit), C1 only unless it says otherwise: C2's compilations compete
        # with the broker's own work for two cores (docs/performance.md).
        return [
            f"-Xmx{self.cluster.heap_mb}m",
            f"-Xms{self.cluster.heap_mb}m",
            "-XX:+AlwaysPreTouch",
            "-XX:+UseG1GC",
            "-XX:MaxGCPauseMillis=20",
            *jit_options(BROKER_JIT),
            "-Djava.awt.headless=true",
            f"-Djava.io.tmpdir={self.scratch}",
            f"-Dlog4j2.configurationFile={self.cluster.workdir / 'log4j2.properties'}",
            "-cp",
            classpath,
            "kafka.Kafka",
            str(self.node_dir / "server.properties"),
        ]

    def stop(self, timeout: float = 30.0) -> None:
        """Controlled shutdown (SIGTERM), SIGKILL if it does not finish in `timeout`."""
        if self.process:
            self.process.stop(timeout=timeout)

    def kill(self) -> None:
        """SIGKILL: the broker dies without flushing or leaving the cluster."""
        if self.process:
            self.process.kill()

    def pause(self) -> None:
        """SIGSTOP: the process is frozen, its sockets stay open but nothing answers."""
        if not self.running():
            raise HarnessError(f"cannot pause {self.name}: it is not running")
        self.process.pause()

    def resume(self) -> None:
        if self.process:
            self.process.resume()

    def restart(self, wait: bool = True, timeout: float = READY_TIMEOUT_S) -> None:
        self.stop()
        self.start(wait=wait, timeout=timeout)

    def exit_reason(self) -> str | None:
        """Why the broker is not running, with the log's last line, or None if it runs."""
        if self.running():
            return None
        last = _last_line(self.log_path)
        return f"{self.name} exited (see {self.log_path}{': ' + last if last else ''})"

    def status(self) -> BrokerStatus:
        return BrokerStatus(
            self.node_id, self.address, self.spec.controller_port, self.pid, self.state(), str(self.log_path)
        )


class EmbeddedCluster:
    """1 or 3 combined broker+controller nodes on loopback, from Kafka's own jars."""

    broker_class = Broker
    runtime = "process"  # where the brokers' JVMs run: processes here (harness.docker.cluster: containers)

    def __init__(
        self,
        workdir: Path,
        cluster_id: str,
        nodes: list[NodeSpec],
        heap_mb: int,
        kafka_version: str,
        security: ClusterSecurity | dict | None = None,
        features: dict[str, int] | None = None,
    ):
        self.workdir = Path(workdir)
        self.security = ClusterSecurity(**security) if isinstance(security, dict) else security
        self.cluster_id = cluster_id
        self.heap_mb = heap_mb
        self.kafka_version = kafka_version
        self.features = dict(features or {})  # feature levels it was formatted with (StorageTool's --feature)
        self.pid_dir = self.workdir / "pids"
        self.supervisor = Supervisor(self.pid_dir)
        self.brokers = [self.broker_class(self, spec) for spec in nodes]
        self.extra_java_options: list[str] = []  # e.g. a CDS training flag (harness.cds_training)
        for broker in self.brokers:
            if broker.process:
                self.supervisor.adopt(broker.process)

    # -- creation and lookup -------------------------------------------------

    @classmethod
    def create(
        cls,
        workdir: Path,
        brokers: int = 1,
        heap_mb: int | None = None,
        links: list[str] = (),
        security: ClusterSecurity | None = None,
        kafka_version: str | None = None,
        features: dict[str, int] | None = None,
        **options,
    ) -> "EmbeddedCluster":
        """Lay out a new cluster in `workdir`: free ports, configs, storage formatted (harness.cluster.storage).

        Its brokers run Kafka `kafka_version` (harness.cluster.releases; the default's when None), its jars fetched
        when missing, formatted with `features` (name -> level).

        Each of `links` gets a client listener on every broker, advertised at a proxy's port
        (link_routes: where harness.network's proxy must listen and forward to). With `security`, the clients'
        listeners are secured and a CA issues the certificates (tls/). `options` are a subclass's (saved with the
        state)."""
        if brokers not in (1, 3):
            raise HarnessError(f"--brokers must be 1 or 3, not {brokers}")
        workdir = Path(workdir).resolve()
        if (workdir / STATE_FILE).exists():
            existing = cls.attach(workdir)
            if existing.running_brokers():
                raise HarnessError(
                    f"a cluster is already running in {workdir}: stop it with `harness cluster down --dir {workdir}`"
                )
            shutil.rmtree(workdir)
        jars.java_executable()  # a clear error now rather than a broker's start failing later
        version = kafka_version or releases.default_version()
        features = releases.checked_features(version, features or {})
        if version != releases.default_version():  # fetched once, as a run names it (the default's: harness jars)
            jars.fetch((releases.jar_set(version),))
        per_node = 2 + 2 * len(links) + (1 if security else 0)
        ports = free_ports(per_node * brokers)
        nodes = []
        for i in range(brokers):
            own = ports[per_node * i : per_node * (i + 1)]
            node_links = {link: [f"LINK{n + 1}", own[2 + 2 * n], own[3 + 2 * n]] for n, link in enumerate(links)}
            nodes.append(NodeSpec(i + 1, own[0], own[1], links=node_links, internal_port=own[-1] if security else None))
        cluster = cls(
            workdir,
            new_kafka_uuid(),
            nodes,
            heap_mb or (512 if brokers == 1 else 384),
            jars.version_in(releases.jar_set(version), "kafka_2.13"),
            security=security,
            features=features,
            **options,
        )
        workdir.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(LOG4J2_FILE, workdir / "log4j2.properties")
        if security:
            identities = security.identities([n.node_id for n in nodes])
            tls.issue_certificates(cluster.tls_dir, identities, host_names=security.host_names)
        for broker in cluster.brokers:
            broker.node_dir.mkdir(parents=True, exist_ok=True)
            props = broker_properties(broker.spec, nodes, broker.node_dir / "data", security, cluster.tls_dir)
            (broker.node_dir / "server.properties").write_text(render_properties(props))
        storage.format_nodes(
            cluster.cluster_id,
            [(b.node_id, b.node_dir / "server.properties", b.node_dir / "data") for b in cluster.brokers],
            BROKER_ROLE,
            cluster.classpath,
            cluster.features,
        )
        cluster._save_state()
        return cluster

    def _save_state(self) -> None:
        state = {
            "cluster_id": self.cluster_id,
            "kafka_version": self.kafka_version,
            "heap_mb": self.heap_mb,
            "nodes": [asdict(b.spec) for b in self.brokers],
            "runtime": self.runtime,
            "options": self.options(),
        }
        (self.workdir / STATE_FILE).write_text(json.dumps(state, indent=2))

    def options(self) -> dict:
        """What the saved state keeps beyond the nodes (keyword arguments of the constructor)."""
        return ({"security": asdict(self.security)} if self.security else {}) | (
            {"features": self.features} if self.features else {}
        )

    @property
    def classpath(self) -> str:
        """Its Kafka version's jars (the brokers' and the tools run against them)."""
        return jars.kafka_classpath(releases.jar_set(self.kafka_version))

    @staticmethod
    def _state(workdir: Path) -> tuple[Path, dict]:
        state_path = Path(workdir).resolve() / STATE_FILE
        if not state_path.exists():
            raise HarnessError(f"no embedded cluster in {state_path.parent} ({STATE_FILE} missing)")
        try:
            state = json.loads(state_path.read_text())
        except ValueError as exc:
            raise HarnessError(f"{state_path}: unreadable cluster state ({exc})") from None
        if not isinstance(state, dict):
            raise HarnessError(f"{state_path}: unreadable cluster state (not an object)")
        return state_path, state

    @classmethod
    def runtime_of(cls, workdir: Path) -> str:
        """Where the brokers of the cluster in `workdir` run: `process`, or `docker` (harness.docker.cluster)."""
        return str(cls._state(workdir)[1].get("runtime", "process"))

    @classmethod
    def attach(cls, workdir: Path) -> "EmbeddedCluster":
        """The cluster described in `workdir`, with the brokers its pid files name."""
        workdir = Path(workdir).resolve()
        state_path, state = cls._state(workdir)
        if state.get("runtime", "process") != cls.runtime:
            raise HarnessError(f"{state_path}: its brokers run as {state['runtime']}, not {cls.runtime}")
        try:
            nodes = [NodeSpec(**n) for n in state["nodes"]]
            return cls(
                workdir,
                state["cluster_id"],
                nodes,
                int(state["heap_mb"]),
                state["kafka_version"],
                **state.get("options", {}),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise HarnessError(f"{state_path}: unreadable cluster state ({exc})") from None

    # -- lifecycle -----------------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        """The clients' listeners (secured as the cluster's security says)."""
        return ",".join(b.address for b in self.brokers)

    @property
    def tls_dir(self) -> Path:
        return self.workdir / "tls"

    def admin_access(self) -> KafkaAccess:
        """How the harness reaches the cluster to administer it: the clients' listeners, or on a secured cluster the
        inter-broker listener with the harness's certificate (which needs no user)."""
        if self.security is None:
            return KafkaAccess(self.bootstrap_servers)
        internal = ",".join(f"{b.spec.host}:{b.spec.internal_port}" for b in self.brokers)
        return KafkaAccess(internal, self.security.admin_security(self.tls_dir))

    def client_access(self, username: str | None = None, password: str | None = None) -> KafkaAccess:
        """How clients reach the cluster: plaintext, or secured as a SCRAM user (add_scram_user) or with the
        clients' certificate."""
        if self.security is None:
            return KafkaAccess(self.bootstrap_servers)
        return KafkaAccess(self.bootstrap_servers, self.security.client_security(self.tls_dir, username), password)

    def add_scram_user(self, username: str, password: str, timeout: float = 30.0) -> None:
        """Create (or change) a SCRAM user through the inter-broker listener, and wait until every broker accepts
        it: the password goes from memory to the brokers, never through a file or a command line."""
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

        if self.security is None or self.security.mode != "sasl_ssl":
            raise HarnessError(f"the cluster at {self.workdir} has no SASL listener to add users to")
        mechanism = getattr(ScramMechanism, self.security.sasl_mechanism.replace("-", "_"))
        admin = AdminClient(self.admin_access().librdkafka())
        upsert = UserScramCredentialUpsertion(username, ScramCredentialInfo(mechanism, 8192), password.encode())
        try:
            for future in admin.alter_user_scram_credentials([upsert]).values():
                future.result(timeout)
        except KafkaException as exc:
            raise HarnessError(f"creating the SCRAM user {username!r} failed: {exc.args[0]}") from None

        def accepted_everywhere() -> bool:
            for broker in self.brokers:
                try:
                    with KafkaAdmin(
                        self.client_access(username, password).at(broker.address),
                        request_timeout_ms=3000,
                        connect_timeout_ms=3000,
                    ) as probe:
                        probe.topics()
                except (HarnessError, KafkaError, OSError):
                    return False
            return True

        wait_for(
            accepted_everywhere, timeout=timeout, interval=0.5, what=f"every broker to accept the user {username!r}"
        )

    def forget_keys(self) -> None:
        """After the cluster's last stop: the private keys go, the certificates stay with the evidence."""
        if self.security is not None and self.tls_dir.exists():
            tls.remove_keys(self.tls_dir)

    def link_routes(self) -> list[dict]:
        """What the network proxy forwards: per link and broker, its listen port -> the broker's link listener."""
        return [
            {"link": link, "broker": b.name, "listen": proxy, "upstream": port}
            for b in self.brokers
            for link, (_, port, proxy) in b.spec.links.items()
        ]

    def broker(self, node_id: int) -> Broker:
        for b in self.brokers:
            if b.node_id == node_id:
                return b
        raise HarnessError(
            f"no broker {node_id} in the cluster at {self.workdir} (nodes: {[b.node_id for b in self.brokers]})"
        )

    def running_brokers(self) -> list[Broker]:
        return [b for b in self.brokers if b.running()]

    def start(self, timeout: float = READY_TIMEOUT_S) -> None:
        """Start every stopped broker and wait until all are live; stop them again on failure."""
        try:
            for broker in self.brokers:
                if not broker.running():
                    broker.start(wait=False)
            self.wait_ready(timeout=timeout)
        except BaseException:
            self.stop()
            raise

    def wait_ready(self, timeout: float = READY_TIMEOUT_S, node_ids: list[int] | None = None) -> None:
        """Poll cluster metadata until the given (default: all) brokers are listed as live."""
        expected = set(node_ids or [b.node_id for b in self.brokers])

        def listed() -> bool:
            # A broker killed moments ago is still listed until its session times out: its new JVM serves once its
            # client port accepts connections again.
            if not all(accepts(self.broker(n).spec.port, self.broker(n).spec.host) for n in expected):
                return False
            try:
                with KafkaAdmin(self.admin_access(), request_timeout_ms=3000, connect_timeout_ms=2000) as admin:
                    return expected <= admin.live_broker_ids()
            except (HarnessError, KafkaError, OSError):  # not up yet: ask again
                return False

        def dead() -> str | None:
            reasons = [self.broker(n).exit_reason() for n in sorted(expected)]
            return "; ".join(r for r in reasons if r) or None

        wait_for(
            listed,
            timeout=timeout,
            interval=0.3,
            what=f"brokers {sorted(expected)} at {self.bootstrap_servers}",
            abort=dead,
        )

    def stop(self, timeout: float = 20.0) -> None:
        """Stop every broker this cluster directory knows of (by pid file), all at once.

        All nodes get SIGTERM together: stopped one by one, the last nodes would
        wait for a controller quorum that is already gone.
        """
        stop_all_recorded(self.pid_dir, timeout=timeout)
        self.supervisor.stop_all(timeout=timeout)

    def close(self, timeout: float = 20.0) -> None:
        """Stop every broker, all at once, and start none again: a fault's thread restarting one is refused."""
        self.supervisor.close(timeout=timeout)
        stop_all_recorded(self.pid_dir, timeout=timeout)  # any broker only a pid file names

    def processes(self) -> list[ManagedProcess]:
        """The brokers' processes, for sampling their memory."""
        return self.supervisor.processes()

    def status(self) -> list[BrokerStatus]:
        return [b.status() for b in self.brokers]

    def admin(self) -> KafkaAdmin:
        return KafkaAdmin(self.admin_access())

    def __enter__(self) -> "EmbeddedCluster":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _last_line(path: Path) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, 2)
            fh.seek(max(0, fh.tell() - 4096))
            return _last_line_of(fh.read().decode(errors="replace"))
    except OSError:
        return ""


def _last_line_of(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""
