"""The scenario's `kafka:` section: how every client of the run speaks to the brokers, and where its secrets are.

    kafka:
      security_protocol: SASL_SSL          # PLAINTEXT (default), SSL, SASL_PLAINTEXT, SASL_SSL
      sasl_mechanism: SCRAM-SHA-256        # SCRAM-SHA-256 (default), SCRAM-SHA-512, PLAIN
      username: pipeline
      password: {env: KAFKA_PASSWORD}      # or {file: secrets/kafka-password}, or the password itself
      ca_file: certs/ca.pem                # the brokers' CA as PEM; or a Java truststore:
      truststore: {path: certs/kafka.truststore.jks, password: {env: TRUSTSTORE_PASSWORD}}
      keystore_file: certs/client.pem      # a client certificate, where the brokers ask for one (key + chain, PEM)

A secret is read when the run starts, kept in memory, and handed to the drivers and the generator in their
environment; the scenario saved with the run says only where it came from.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.field import Field
from harness.scenario.fields import BlueprintError, Fields
from harness.scenario.sections import Section
from pipelines.kafka_security import PROTOCOLS, SASL_MECHANISMS

CLUSTER_SECURITY = {"sasl_ssl": "SASL_SSL", "ssl": "SSL"}  # cluster.security -> the clients' protocol


@dataclass(frozen=True)
class Secret:
    """Where a secret is: an environment variable, a file, or (discouraged) the scenario itself."""

    env: str | None = None
    file: str | None = None
    value: str | None = field(default=None, repr=False)

    def resolve(self, what: str) -> str:
        if self.env is not None:
            if self.env not in os.environ:
                raise HarnessError(f"{what}: the environment variable {self.env} is not set")
            return os.environ[self.env]
        if self.file is not None:
            try:
                return Path(self.file).read_text().rstrip("\r\n")
            except OSError as exc:
                raise HarnessError(f"{what}: cannot read {self.file} ({exc.strerror})") from None
        return self.value or ""


@dataclass(frozen=True)
class KafkaClientSpec:
    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None
    username: str | None = None
    password: Secret | None = None
    ca_file: str | None = None
    truststore: str | None = None  # a JKS or PKCS12 truststore, read with keytool into PEM at the start
    truststore_password: Secret | None = None
    keystore_file: str | None = None

    @property
    def sasl(self) -> bool:
        return self.security_protocol.startswith("SASL_")


SECRET = "the secret itself, {env: VARIABLE} or {file: PATH}"
KAFKA = Section(
    "kafka",
    (
        Field("security_protocol", str, "PLAINTEXT", "how the clients reach the brokers", choices=PROTOCOLS),
        Field("sasl_mechanism", str, "SCRAM-SHA-256", "with SASL_*", choices=SASL_MECHANISMS),
        Field("username", str, None, "with SASL_*"),
        Field("password", (str, dict), None, f"with SASL_*: {SECRET}"),
        Field("ca_file", str, None, "with *SSL: the brokers' CA (PEM)"),
        Field("truststore", dict, None, "with *SSL: or a truststore {path, password}"),
        Field("keystore_file", str, None, "with *SSL: the client's key and certificate (PEM), for mutual TLS"),
    ),
)
TRUSTSTORE = Section(
    "kafka.truststore",
    (Field("path", str, None, "a JKS or PKCS12 file", required=True), Field("password", (str, dict), None, SECRET)),
)


def _secret(raw: Any, path: str) -> Secret:
    if isinstance(raw, str):
        return Secret(value=raw)
    f = Fields(raw, path, {"env", "file"})
    env, file = f.get("env", str, None), f.get("file", str, None)
    if (env is None) == (file is None):
        raise BlueprintError(path, "expected the secret itself, {env: VARIABLE} or {file: PATH}")
    return Secret(env=env, file=file)


def _file(name: str | None, where: str, folder: Path | None) -> str | None:
    if name is None:
        return None
    path = (folder or Path.cwd()) / name
    if not path.is_file():
        raise BlueprintError(where, f"no such file: {path}")
    return str(path.resolve())


def parse_kafka(raw: Any, folder: Path | None, external: bool, cluster_security: str | None) -> KafkaClientSpec | None:
    """Validate `kafka:` against the cluster: a cluster one runs takes any settings; the embedded secured cluster
    (cluster.security) brings its own CA and creates the user given here."""
    if raw is None:
        return None
    v = KAFKA.read(raw)
    protocol = v["security_protocol"]
    sasl, tls = protocol.startswith("SASL_"), protocol.endswith("SSL")
    for key, allowed in (
        ("sasl_mechanism", sasl),
        ("username", sasl),
        ("password", sasl),
        ("ca_file", tls),
        ("truststore", tls),
        ("keystore_file", tls),
    ):
        if key in raw and not allowed:
            raise BlueprintError(f"kafka.{key}", f"not used with security_protocol {protocol}")
    if sasl:
        for key in ("username", "password"):
            if key not in raw:
                raise BlueprintError(f"kafka.{key}", f"required with security_protocol {protocol}")
    if "ca_file" in raw and "truststore" in raw:
        raise BlueprintError("kafka.truststore", "give the brokers' CA once: ca_file or truststore")
    store_path, store_password = None, None
    if "truststore" in raw:
        t = TRUSTSTORE.read(raw["truststore"])
        store_path = _file(t["path"], "kafka.truststore.path", folder)
        store_password = (
            _secret(raw["truststore"]["password"], "kafka.truststore.password")
            if "password" in raw["truststore"]
            else None
        )
    spec = KafkaClientSpec(
        security_protocol=protocol,
        sasl_mechanism=v["sasl_mechanism"] if sasl else None,
        username=v["username"],
        password=_secret(raw["password"], "kafka.password") if "password" in raw else None,
        ca_file=_file(v["ca_file"], "kafka.ca_file", folder),
        truststore=store_path,
        truststore_password=store_password,
        keystore_file=_file(v["keystore_file"], "kafka.keystore_file", folder),
    )
    if not external:
        if cluster_security is None:
            raise BlueprintError(
                "kafka",
                "the embedded cluster speaks plaintext: add cluster.security (sasl_ssl or ssl), "
                "or point the scenario at your cluster (cluster.bootstrap_servers)",
            )
        wanted = CLUSTER_SECURITY[cluster_security]
        if protocol != wanted:
            raise BlueprintError(
                "kafka.security_protocol",
                f"the embedded cluster with security {cluster_security} speaks {wanted}, not {protocol}",
            )
        for key in ("ca_file", "truststore", "keystore_file"):
            if key in raw:
                raise BlueprintError(f"kafka.{key}", "the embedded cluster makes its own CA and certificates")
        if spec.sasl_mechanism not in (None, "SCRAM-SHA-256", "SCRAM-SHA-512"):
            raise BlueprintError(
                "kafka.sasl_mechanism", "the embedded cluster creates SCRAM users: SCRAM-SHA-256 or SCRAM-SHA-512"
            )
    return spec


def saved_kafka(raw: Any) -> Any:
    """The `kafka:` section as it is saved with the run: secrets given in the scenario replaced by ***."""
    if not isinstance(raw, dict):
        return raw
    kept = dict(raw)
    if isinstance(kept.get("password"), str):
        kept["password"] = "***"
    if isinstance(kept.get("truststore"), dict) and isinstance(kept["truststore"].get("password"), str):
        kept["truststore"] = {**kept["truststore"], "password": "***"}
    return kept
