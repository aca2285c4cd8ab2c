"""Where the brokers are and how to speak to them: bootstrap servers, security, and the password in memory.

Every client the harness makes (admin, readers, the recorder, the sampler, the generator and the drivers'
settings) takes a KafkaAccess instead of a bare bootstrap string, so a secured cluster needs one description.
The password is never printed (repr) nor saved: it goes to a child process in its environment only.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field, replace

from harness.errors import HarnessError
from pipelines.kafka_security import PASSWORD_ENV, KafkaSecurity


@dataclass(frozen=True)
class KafkaAccess:
    bootstrap_servers: str
    security: KafkaSecurity = field(default_factory=KafkaSecurity)
    password: str | None = field(default=None, repr=False)
    namespace: str | None = None  # on a cluster the harness did not create: the only topic prefix it may change

    @classmethod
    def of(cls, target: "KafkaAccess | str") -> "KafkaAccess":
        """A plaintext cluster's bootstrap string, or an access as it is."""
        return target if isinstance(target, KafkaAccess) else cls(target)

    def at(self, bootstrap_servers: str) -> "KafkaAccess":
        """The same brokers reached another way (a network link's proxy)."""
        return replace(self, bootstrap_servers=bootstrap_servers)

    def kafka_python(self) -> dict:
        return {"bootstrap_servers": self.bootstrap_servers, **self.security.kafka_python(self.password)}

    def librdkafka(self) -> dict:
        return {"bootstrap.servers": self.bootstrap_servers, **self.security.librdkafka(self.password)}

    def child_env(self) -> dict[str, str]:
        """What a driver or the generator needs in its environment: the password, where there is one."""
        return {PASSWORD_ENV: self.password} if self.password is not None else {}

    def describe(self) -> str:
        """For the console and the history: the brokers, the protocol and the user, never the password."""
        sec = self.security
        if sec.protocol == "PLAINTEXT":
            return self.bootstrap_servers
        who = f" as {sec.username} ({sec.sasl_mechanism})" if sec.sasl else ""
        return f"{self.bootstrap_servers} over {sec.protocol}{who}"

    def check(self, timeout: float = 15.0) -> None:
        """Before anything starts: the brokers answer this access, or one line says what failed (authentication,
        TLS, the network)."""
        from confluent_kafka import KafkaError as ClientError
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient

        seen: list = []
        quiet = logging.getLogger("harness.kafka-check")  # librdkafka's own log lines would repeat each failure
        quiet.addHandler(logging.NullHandler())
        quiet.propagate = False
        admin = AdminClient({**self.librdkafka(), "error_cb": seen.append, "logger": quiet})
        fatal = (ClientError._AUTHENTICATION, ClientError._SSL)
        deadline = time.monotonic() + timeout
        while True:
            try:
                admin.list_topics(timeout=min(2.0, max(0.1, deadline - time.monotonic())))
                return
            except KafkaException as exc:
                last = exc.args[0]
            admin.poll(0.2)  # the client's errors reach error_cb here
            if any(e.code() in fatal for e in seen) or time.monotonic() > deadline:
                break
        seen.append(last)
        codes = {e.code() for e in seen}
        detail = next((e.str() for e in seen if e.code() in fatal), seen[0].str())
        if ClientError._AUTHENTICATION in codes:
            raise HarnessError(f"authentication failed at {self.describe()}: {_short(detail)}")
        # e.g. the broker refused our certificate
        refused_tls = next((e.str() for e in seen if "SSL routines" in e.str()), None)
        if ClientError._SSL in codes or refused_tls:
            raise HarnessError(
                f"TLS failed at {self.describe()}: {_short(detail if ClientError._SSL in codes else refused_tls)}"
            )
        raise HarnessError(f"no Kafka broker reachable at {self.describe()} within {timeout:.0f}s: {_short(detail)}")


def _short(text: str) -> str:
    """librdkafka's message without the broker's address in front and the client state at the end."""
    text = re.sub(r"^\S+://\S+: ", "", (text or "no detail").splitlines()[0])
    return re.sub(r"\s*\(after \d+ms in state \w+.*\)$", "", text)[:300]
