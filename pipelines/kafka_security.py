"""How a Kafka client authenticates to the brokers and trusts them, in each client's own terms.

One description (protocol, SASL mechanism, user, PEM files) serves Spark's Kafka source and sink (`kafka.*`
options), librdkafka (the generator) and kafka-python (the harness's admin, readers and recorder), so every
client of a run speaks to the brokers the same way. It holds no secret: the SASL password is given to each
method, and reaches a driver or the generator in its environment (PASSWORD_ENV), never in a file or on a
command line.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

PASSWORD_ENV = "HARNESS_KAFKA_PASSWORD"
PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN")
LOGIN_MODULES = {"PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule"}
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"


@dataclass(frozen=True)
class KafkaSecurity:
    protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None  # with SASL_*: SCRAM-SHA-256, SCRAM-SHA-512 or PLAIN
    username: str | None = None
    ca_file: str | None = None  # PEM: the certificates the brokers' are signed by (None: the system's)
    keystore_file: str | None = None  # PEM: the client's key and certificate chain, where brokers ask for one (mTLS)

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    @property
    def tls(self) -> bool:
        return self.protocol.endswith("SSL")

    def spark_options(self, password: str | None) -> dict[str, str]:
        """Spark's Kafka source and sink options (`kafka.` + the Java client's settings)."""
        options = {"kafka.security.protocol": self.protocol}
        if self.sasl:
            module = LOGIN_MODULES.get(self.sasl_mechanism, SCRAM_LOGIN_MODULE)
            options["kafka.sasl.mechanism"] = self.sasl_mechanism
            options["kafka.sasl.jaas.config"] = (
                f'{module} required username="{_jaas_quoted(self.username)}" password="{_jaas_quoted(password or "")}";'
            )
        if self.tls and self.ca_file:
            options.update({"kafka.ssl.truststore.type": "PEM", "kafka.ssl.truststore.location": self.ca_file})
        if self.tls and self.keystore_file:
            options.update({"kafka.ssl.keystore.type": "PEM", "kafka.ssl.keystore.location": self.keystore_file})
        return options

    def librdkafka(self, password: str | None) -> dict[str, str]:
        """librdkafka's (confluent-kafka's) settings."""
        config = {"security.protocol": self.protocol}
        if self.sasl:
            config.update(
                {
                    "sasl.mechanism": self.sasl_mechanism,
                    "sasl.username": self.username or "",
                    "sasl.password": password or "",
                }
            )
        if self.tls and self.ca_file:
            config["ssl.ca.location"] = self.ca_file
        if self.tls and self.keystore_file:
            config.update({"ssl.certificate.location": self.keystore_file, "ssl.key.location": self.keystore_file})
        return config

    def kafka_python(self, password: str | None) -> dict:
        """kafka-python's keyword arguments."""
        config: dict = {"security_protocol": self.protocol}
        if self.sasl:
            config.update(
                {
                    "sasl_mechanism": self.sasl_mechanism,
                    "sasl_plain_username": self.username,
                    "sasl_plain_password": password or "",
                }
            )
        if self.tls:
            config["ssl_check_hostname"] = True
            if self.ca_file:
                config["ssl_cafile"] = self.ca_file
            if self.keystore_file:
                config.update({"ssl_certfile": self.keystore_file, "ssl_keyfile": self.keystore_file})
        return config


def password_from_env() -> str | None:
    """The SASL password the harness gave this process (a driver, the generator), or None."""
    return os.environ.get(PASSWORD_ENV)


def _jaas_quoted(text: str | None) -> str:
    """A value inside a JAAS option's double quotes."""
    return (text or "").replace("\\", "\\\\").replace('"', '\\"')
