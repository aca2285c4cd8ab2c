"""The placeholders of an application's command, environment, world and templates: what the run fills in
(${bootstrap}, ${checkpoint}, ${topic.NAME}, ...: what the output kinds offer too), each checked against what the
scenario declares before anything starts."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from harness.outputs import builtin_output_kinds
from harness.scenario.fields import BlueprintError

PLACEHOLDER = re.compile(r"\$\{([^{}]*)\}")
# What the harness fills in a command's arguments and environment, known here alone.
PLACEHOLDERS = {
    "bootstrap": "the brokers' bootstrap servers",
    "checkpoint": "the application's checkpoint folder (it resumes from there after a restart)",
    "checkpoints": "the folder holding it: a job given one base folder makes a subfolder per query there",
    "scratch": "a folder of its own in the run directory",
    "ui_port": "a free port (for spark.ui.port, if the job enables its UI)",
    "starting_offsets": "earliest, or what a redeploy restarts it from (its `starting`: earliest or latest)",
    "topic.NAME": "the real name of the scenario's topic NAME (namespaced on a cluster one runs)",
    "topic_prefix": "what the run's topic names begin with, as a regular expression, for a subscribePattern "
    "(${topic_prefix}shop-.*): nothing on the embedded cluster, the run's namespace on a cluster one runs",
    "store.url": "the scenario's PostgreSQL store, its password left out (the job gets it as PGPASSWORD)",
    "store.schema": "the run's own schema in that store",
    "store.jdbc": "that store and schema as Spark's JDBC writer names it, its password left out (PGPASSWORD)",
    "registry": "the run's schema registry's URL (workload.record.registry: true), the subject TOPIC-value",
    "kafka.security_protocol": "a secured cluster's protocol (SASL_SSL, SSL), as kafka.security.protocol takes it",
    "kafka.sasl_mechanism": "its SASL mechanism (SCRAM-SHA-256, ...), as kafka.sasl.mechanism takes it",
    "kafka.username": "the scenario's Kafka user (kafka.username)",
    "kafka.ca_file": "the brokers' CA as a PEM file (kafka.ssl.truststore.type PEM, .location this)",
    "kafka.keystore_file": "the client's key and certificate as one PEM file, where the brokers ask clients for one "
    "(mutual TLS: kafka.ssl.keystore.type PEM, .location this)",
    "kafka.password": "that user's password: in an application's env only, never its command (every process sees it)",
}
SECRET = "kafka.password"  # a placeholder whose value no command line may carry
CERTIFICATE = "kafka.keystore_file"  # a placeholder only a cluster asking clients for a certificate gives
KAFKA = "kafka"  # the prefix of a secured cluster's placeholders
# ...and what the output kinds offer (harness/outputs/kinds/): prefix -> its placeholder (${table.NAME})
OFFERED = {p.prefix: p for kind in builtin_output_kinds().values() for p in kind.placeholders}
PLACEHOLDERS.update({f"{prefix}.NAME": p.help for prefix, p in OFFERED.items()})


@dataclass(frozen=True)
class Known:
    """What placeholders may name: topics, what the outputs offer (prefix -> names), and whether there is a store."""

    topics: set[str]
    offered: dict[str, set[str]]
    store: bool
    record: dict | None  # the workload's record template (None: the harness's own records)
    folder: Path | None  # the scenario's folder, where relative paths start
    own_kind: bool = False  # an output of a kind of the team's own (which may start a store the harness cannot)
    secured: bool = False  # the clients reach the brokers secured (the scenario's kafka section): ${kafka.*}
    certificate: bool = False  # and present a certificate of their own (mutual TLS): ${kafka.keystore_file}


def placeholders(text: str) -> list[str]:
    """The placeholder names in `text` (`${bootstrap}` -> bootstrap)."""
    return PLACEHOLDER.findall(text)


def fill(text: str, values: dict[str, str]) -> str:
    """`text` with every placeholder replaced by its value (all were checked when the scenario was read)."""
    return PLACEHOLDER.sub(lambda m: values[m.group(1)], text)


def check_placeholders(text: str, known: "Known", path: str, secret: bool = False) -> None:
    """BlueprintError naming `path` where `text` names a placeholder the run will not have, or the password where
    it is not a `secret`'s place (a command line, a file the harness writes: only an environment is)."""
    for name in placeholders(text):
        if name == SECRET and not secret:
            raise BlueprintError(path, f"${{{name}}}: only in an application's env (a command line or a file is seen)")
        prefix, _, rest = name.partition(".")
        if prefix == "topic" and rest:
            if rest not in known.topics:
                topics = ", ".join(sorted(known.topics))
                raise BlueprintError(path, f"${{{name}}}: no topic {rest!r} (topics: {topics})")
        elif prefix in OFFERED and rest:
            if rest not in known.offered.get(prefix, ()):
                what = OFFERED[prefix]
                names = ", ".join(sorted(known.offered.get(prefix, ()))) or "none"
                raise BlueprintError(path, f"${{{name}}}: no {what.noun} {rest!r} ({what.plural}: {names})")
        elif prefix == "store" and name in PLACEHOLDERS and not known.store:
            raise BlueprintError(path, f"${{{name}}}: the scenario has no PostgreSQL store (store: postgresql://...)")
        elif prefix == KAFKA and name in PLACEHOLDERS and not known.secured:
            raise BlueprintError(path, f"${{{name}}}: the cluster is not secured (kafka.security_protocol)")
        elif name == CERTIFICATE and not known.certificate:
            raise BlueprintError(path, f"${{{name}}}: the cluster asks clients for no certificate (no mutual TLS)")
        elif name == "registry" and not (known.record and known.record.get("registry")):
            raise BlueprintError(path, "${registry}: the run serves no registry (workload.record.registry: true)")
        elif name not in PLACEHOLDERS:
            raise BlueprintError(path, f"unknown placeholder ${{{name}}} (expected one of {', '.join(PLACEHOLDERS)})")
