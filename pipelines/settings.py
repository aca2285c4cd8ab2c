"""What a streamlet driver is told at start (written by the harness as JSON, read by the driver)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class SourceOptions:
    """Kafka source and trigger options of a streamlet's queries."""

    trigger: str = "processingTime"  # default | processingTime | availableNow
    trigger_interval: str = "1 second"
    max_offsets_per_trigger: int | None = None
    fail_on_data_loss: bool = True
    starting_offsets: str = "earliest"  # earliest | latest (used only without a checkpoint)
    starting_timestamp_ms: int | None = None  # overrides starting_offsets when set


@dataclass(frozen=True)
class DriverSettings:
    name: str  # the streamlet instance in the blueprint
    kind: str
    settings: dict
    bootstrap_servers: str
    run_dir: str
    inputs: dict = field(default_factory=dict)  # inlet -> topic
    outputs: dict = field(default_factory=dict)  # outlet -> topic
    source_topic: str | None = None
    source: SourceOptions = field(default_factory=SourceOptions)
    master: str = "local[1, 4]"  # 1 core; a failed task is retried up to 4 times
    store_url: str | None = None  # egress: PostgreSQL URL; SQLite in the run directory when None
    # False only to measure what the evidence costs (bench/pipeline_throughput.py): no batch stamps, no audit.
    # Such a run cannot be judged; scenarios cannot ask for it.
    evidence: bool = True
    import_paths: list = field(default_factory=list)  # folders a user's streamlet is imported from

    def save(self, path: Path) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(asdict(self), indent=2))

    @classmethod
    def load(cls, path: Path) -> "DriverSettings":
        data = json.loads(Path(path).read_text())
        data["source"] = SourceOptions(**data.get("source", {}))
        return cls(**data)
