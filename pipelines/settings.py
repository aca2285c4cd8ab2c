"""What a streamlet driver is told at start (written by the harness as JSON, read by the driver).

Everything the driver needs from the harness is in here, paths and Spark configuration included, so nothing in
pipelines/ imports the harness.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from pipelines.kafka_security import KafkaSecurity


def _option(default, what: str, **checks):
    """A source option: its default, what it does (docs/scenarios.md), and how the scenario checks it (`choices`,
    `minimum`): the scenario's source_options section is declared by these fields (harness/scenario/declared.py)."""
    return field(default=default, metadata={"help": what, **checks})


@dataclass(frozen=True)
class SourceOptions:
    """Kafka source and trigger options of a streamlet's queries, each declared once: the scenario reads them as
    source_options.NAME, and the driver's context (pipelines/context.py) passes them to Spark."""

    trigger: str = _option(
        "processingTime", "how its batches are triggered", choices=("default", "processingTime", "availableNow")
    )
    trigger_interval: str = _option("1 second", "the processing-time trigger's interval")
    max_offsets_per_trigger: int | None = _option(None, "Spark's maxOffsetsPerTrigger", minimum=1)
    # a batch waits for this many new offsets, or max_trigger_delay (Spark 3.3+)
    min_offsets_per_trigger: int | None = _option(None, "Spark's minOffsetsPerTrigger", minimum=1)
    max_trigger_delay: str | None = _option(None, "Spark's maxTriggerDelay: 30s, 15m (with min_offsets_per_trigger)")
    fail_on_data_loss: bool = _option(True, "Spark's failOnDataLoss")
    starting_offsets: str = _option(
        "earliest", "where a first start begins", choices=("earliest", "latest")
    )  # used only without a checkpoint
    starting_timestamp_ms: int | None = _option(None, "or from this time", minimum=0)  # overrides starting_offsets
    # kafka.group.id (Spark makes a unique one per query when unset)
    group_id: str | None = _option(None, "Spark's kafka.group.id")
    isolation_level: str | None = _option(
        None, "kafka.isolation.level", choices=("read_committed", "read_uncommitted")
    )  # Kafka's default when unset
    # includeHeaders: records keep their Kafka headers (a `headers` column)
    include_headers: bool = _option(False, "Spark's includeHeaders")


@dataclass(frozen=True)
class DriverPaths:
    """Where the driver writes its evidence and keeps its state (the run directory's layout, resolved)."""

    checkpoints: str  # one checkpoint folder per query inside
    progress: str  # the listener's JSON lines
    spark_local: str  # spark.local.dir: cleared at start (what a killed predecessor left)
    crash_arm: str  # created by the harness to arm the crash point
    crash_held: str  # written by the driver holding at its crash point
    crash_offered: str  # written by the driver once a query of it passes the crash point (foreachBatch)
    egress_db: str  # an egress's SQLite store (used when store_url is None)
    dropped: str  # the records this streamlet dropped by design (JSON lines), declared through its context
    workdir: str  # a folder of the streamlet's own in the run directory (ctx.workdir)
    egress_state: str  # an egress of your own: its final state, exported after the run (pipelines/export.py)
    store_namespace: str  # an egress's PostgreSQL schema
    egress_audit: str = ""  # set: an egress's deliveries go to segments in this folder, not its store's audit table
    egress_records: str = ""  # set: an exported egress's final state goes to segments in this folder (columnar)


@dataclass(frozen=True)
class DriverSettings:
    name: str  # the streamlet instance in the blueprint
    kind: str
    settings: dict
    bootstrap_servers: str
    paths: DriverPaths
    spark_conf: dict  # the SparkSession's configuration: the connector jars, JVM flags, a small machine's sizes
    inputs: dict = field(default_factory=dict)  # inlet -> topic
    outputs: dict = field(default_factory=dict)  # outlet -> topic
    source_topic: str | None = None
    source: SourceOptions = field(default_factory=SourceOptions)
    master: str = "local[1, 4]"  # 1 core; a failed task is retried up to 4 times
    app_name: str = ""  # the Spark application's name ("" -> streamlet-NAME)
    log_level: str = "WARN"
    store_url: str | None = None  # egress: PostgreSQL URL; SQLite in the run directory when None
    # False only to measure what the evidence costs (bench/pipeline_throughput.py): no batch stamps, no audit.
    # Such a run cannot be judged; scenarios cannot ask for it.
    evidence: bool = True
    import_paths: list = field(default_factory=list)  # folders a user's streamlet is imported from
    codecs: dict = field(default_factory=dict)  # topic -> how its values are encoded (json where missing)
    kafka_security: KafkaSecurity = field(default_factory=KafkaSecurity)  # the password comes in the environment
    group_id_prefix: str | None = (
        None  # on a cluster one runs: Spark's consumer groups are named in the run's namespace
    )

    def save(self, path: Path) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(asdict(self), indent=2))

    @classmethod
    def load(cls, path: Path) -> "DriverSettings":
        data = json.loads(Path(path).read_text())
        data["source"] = SourceOptions(**data.get("source", {}))
        data["paths"] = DriverPaths(**data["paths"])
        data["kafka_security"] = KafkaSecurity(**data.get("kafka_security", {}))
        return cls(**data)


class SettingsView:
    """What every context gives a streamlet's code, with or without Spark: its settings and its folder."""

    def __init__(self, settings: DriverSettings):
        self.settings = settings
        self.name = settings.name

    def setting(self, name: str):
        """This streamlet's value of one of its declared settings (the blueprint's, or the default)."""
        return self.settings.settings[name]

    @property
    def workdir(self) -> Path:
        """A folder of this streamlet's own in the run directory (an egress may keep its store there)."""
        path = Path(self.settings.paths.workdir)
        path.mkdir(parents=True, exist_ok=True)
        return path
