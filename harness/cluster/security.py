"""A secured embedded cluster: SASL_SSL (SCRAM) or mutual TLS for clients, TLS with certificates between brokers.

Listeners of a secured node:

    CLIENT      the clients' (SASL_SSL with SCRAM users, or SSL asking each client for its certificate)
    LINKn       a network link's client listener, secured as CLIENT
    INTERNAL    inter-broker traffic and the harness's own administration: SSL, a certificate required
    CONTROLLER  the KRaft quorum: SSL, a certificate required

The brokers and the harness prove who they are with certificates the cluster's throwaway CA issued
(harness.cluster.tls), so no inter-broker password exists anywhere. SCRAM users are added after start through
INTERNAL (add_scram_user): their passwords never pass through a file or a command line (unlike
`kafka-storage format --add-scram`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.cluster.tls import CA_FILE
from harness.errors import HarnessError
from pipelines.kafka_security import KafkaSecurity

MODES = ("sasl_ssl", "ssl")
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
ADMIN_IDENTITY = "harness-admin"  # the certificate the harness administers the cluster with
CLIENT_IDENTITY = "harness-client"  # the certificate clients present in `ssl` mode
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule required;"


@dataclass(frozen=True)
class ClusterSecurity:
    mode: str  # sasl_ssl | ssl
    sasl_mechanism: str = "SCRAM-SHA-256"  # sasl_ssl: the mechanism the users are created for
    # the names the brokers' certificates are valid for besides loopback: those jobs dial in their worlds (a hosts
    # file there makes each loopback: harness/runner/world.py)
    host_names: tuple[str, ...] = ()

    def __post_init__(self):
        if self.mode not in MODES:
            raise HarnessError(f"cluster security must be one of {', '.join(MODES)}, not {self.mode!r}")
        if self.sasl_mechanism not in SCRAM_MECHANISMS:
            raise HarnessError(
                f"the embedded cluster's SASL mechanism must be one of {', '.join(SCRAM_MECHANISMS)}, "
                f"not {self.sasl_mechanism!r}"
            )

    @property
    def client_protocol(self) -> str:
        return "SASL_SSL" if self.mode == "sasl_ssl" else "SSL"

    def identities(self, node_ids: list[int]) -> list[str]:
        """Whose certificates the cluster's CA issues."""
        return [f"broker-{n}" for n in node_ids] + [ADMIN_IDENTITY] + ([CLIENT_IDENTITY] if self.mode == "ssl" else [])

    def broker_properties(self, node_id: int, tls_dir: Path, client_listeners: list[str]) -> dict[str, str]:
        """What a node adds to its server.properties (the listeners themselves are harness.cluster.config's)."""
        props = {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(tls_dir / f"broker-{node_id}.pem"),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(tls_dir / CA_FILE),
            "listener.name.internal.ssl.client.auth": "required",
            "listener.name.controller.ssl.client.auth": "required",
        }
        for listener in client_listeners:
            name = listener.lower()
            if self.mode == "ssl":
                props[f"listener.name.{name}.ssl.client.auth"] = "required"
            else:
                props[f"listener.name.{name}.sasl.enabled.mechanisms"] = self.sasl_mechanism
                props[f"listener.name.{name}.{self.sasl_mechanism.lower()}.sasl.jaas.config"] = SCRAM_MODULE
        return props

    def admin_security(self, tls_dir: Path) -> KafkaSecurity:
        """How the harness administers the cluster: through INTERNAL, with its certificate."""
        return KafkaSecurity(
            "SSL", ca_file=str(tls_dir / CA_FILE), keystore_file=str(tls_dir / f"{ADMIN_IDENTITY}.pem")
        )

    def client_security(self, tls_dir: Path, username: str | None) -> KafkaSecurity:
        """How every client of a run speaks to the CLIENT listeners (as `username` with SASL)."""
        if self.mode == "ssl":
            return KafkaSecurity(
                "SSL", ca_file=str(tls_dir / CA_FILE), keystore_file=str(tls_dir / f"{CLIENT_IDENTITY}.pem")
            )
        return KafkaSecurity("SASL_SSL", self.sasl_mechanism, username, ca_file=str(tls_dir / CA_FILE))
