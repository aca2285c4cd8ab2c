"""`cluster.kafka`: which Kafka the embedded cluster runs, and the feature levels it is formatted with."""

from __future__ import annotations

from harness.cluster import releases
from harness.errors import HarnessError
from harness.field import Field
from harness.scenario.fields import BlueprintError
from harness.scenario.sections import Section

KAFKA_BROKERS = Section(
    "cluster.kafka",
    (
        Field("version", str, None, "the embedded brokers' Kafka (the harness's own by default; docs/clusters.md)"),
        Field("features", dict, {}, "feature levels a new cluster is formatted with (transaction.version: 1, ...)"),
    ),
)


def kafka_brokers(raw: dict | None, external: str | None) -> tuple[str | None, dict[str, int]]:
    """The embedded brokers' Kafka version (None: the harness's own) and the features they are formatted with."""
    if raw is None:
        return None, {}
    k = KAFKA_BROKERS.read(raw)
    if external:
        raise BlueprintError(
            "cluster.kafka", "a cluster you run has its own version and features (versions.json asks its brokers)"
        )
    version = k["version"] or releases.default_version()
    try:
        features = releases.checked_features(version, k["features"])
    except HarnessError as exc:  # its message starts with the field it is about
        field, _, message = str(exc).partition(": ")
        raise BlueprintError(field, message) from None
    return (None if version == releases.default_version() else version), features
