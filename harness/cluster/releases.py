"""The Kafka releases the embedded cluster runs: each line's feature levels, and the jar set of a version.

Every version's brokers and tools come from the one shipped pom (jars/kafka/pom.xml), given the version as its
`kafka.version` property; the pom's own is the default. A line's features are those a new cluster may be formatted
with (StorageTool's --feature), measured with each line's StorageTool: 3.9 knows transaction.version at level 0
only and has no eligible leader replicas; from 4.0 both are settable. Nothing else in the harness names a Kafka
version.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from harness import jars
from harness.errors import HarnessError

TRANSACTIONS = "transaction.version"
ELIGIBLE_LEADERS = "eligible.leader.replicas.version"


@dataclass(frozen=True)
class KafkaLine:
    """A Kafka release line (major.minor): the metadata.version a new cluster of it has, and each feature a new
    cluster may set: its highest level and the level it gets when none is set."""

    metadata_level: int
    features: dict[str, tuple[int, int]]  # feature -> (highest level, a new cluster's level)


_FROM_4_0 = {TRANSACTIONS: (2, 2), ELIGIBLE_LEADERS: (1, 0)}
_FROM_4_1 = {TRANSACTIONS: (2, 2), ELIGIBLE_LEADERS: (1, 1)}  # KIP-966: on for new clusters from 4.1
LINES = {
    "3.9": KafkaLine(21, {TRANSACTIONS: (0, 0)}),
    "4.0": KafkaLine(25, _FROM_4_0),
    "4.1": KafkaLine(27, _FROM_4_1),
    "4.2": KafkaLine(29, _FROM_4_1),
    "4.3": KafkaLine(30, _FROM_4_1),
    "4.4": KafkaLine(33, _FROM_4_1),
}


@functools.lru_cache(maxsize=1)
def default_version() -> str:
    """The harness's own brokers' version: the shipped pom's `kafka.version`."""
    found = re.search(r"<kafka\.version>([^<]+)</kafka\.version>", (jars.POM_DIR / jars.BROKER / "pom.xml").read_text())
    if not found:
        raise HarnessError(f"{jars.POM_DIR / jars.BROKER / 'pom.xml'}: no kafka.version property")
    return found.group(1)


def line_of(version: str) -> str:
    return ".".join(version.split(".")[:2])


def line(version: str, where: str = "cluster.kafka.version") -> KafkaLine:
    """The release line of Kafka `version`, or one line saying which the harness runs."""
    if not re.fullmatch(r"\d+\.\d+\.\d+", version):
        raise HarnessError(f"{where}: {version!r} is not a Kafka release (major.minor.patch, e.g. 3.9.1)")
    known = LINES.get(line_of(version))
    if known is None:
        raise HarnessError(f"{where}: Kafka {version}: the embedded cluster runs the lines {', '.join(LINES)}")
    return known


def jar_set(version: str | None = None) -> jars.JarSet:
    """The brokers' and tools' jars of `version` (the default's set keeps the pom's own name)."""
    if version is None or version == default_version():
        return jars.JarSet(jars.BROKER)
    line(version)
    return jars.JarSet(jars.BROKER, version, (("kafka.version", version),))


def checked_features(version: str, features: dict, where: str = "cluster.kafka.features") -> dict[str, int]:
    """`features` (name -> level) as a new cluster of `version` may be formatted with, or one line saying what it
    has."""
    known = line(version).features
    checked = {}
    for name, level in features.items():
        if name not in known:
            has = ", ".join(known) or "none"
            raise HarnessError(f"{where}.{name}: Kafka {version} has no such feature (settable: {has})")
        if not isinstance(level, int) or isinstance(level, bool) or not 0 <= level <= known[name][0]:
            raise HarnessError(f"{where}.{name}: Kafka {version} has levels 0 to {known[name][0]}, not {level!r}")
        checked[name] = level
    return checked


def line_reporting(metadata_level: int) -> str | None:
    """The newest line whose new clusters have at most `metadata_level` (the highest metadata.version a broker
    supports says its release), or None below every line."""
    lines = [name for name, known in LINES.items() if known.metadata_level <= metadata_level]
    return lines[-1] if lines else None
