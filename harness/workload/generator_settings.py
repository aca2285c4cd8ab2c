"""Workload settings: what the generator produces, shared by the scenario loader and the generator."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from pipelines.kafka_security import KafkaSecurity


@dataclass(frozen=True)
class WorkloadSettings:
    bootstrap_servers: str
    topic: str
    ack_log: str  # acks.csv the generator appends to, or a folder of segments (harness/evidence/acks.py)
    keys: int = 8
    rate: float = 200.0  # records per second
    duration_s: float | None = 30.0  # None: until stopped
    max_records: int | None = None
    payload_bytes: int = 64
    seed: int = 1
    late_share: float = 0.0  # share of records whose event time is set back
    late_by_s: float = 0.0
    late_after: int = 0  # the first `late_after` records are never late (lets a watermark form)
    resend_share: float = 0.0  # share of records sent again, the same record, resend_after_s later
    resend_after_s: float = 0.0
    idempotence: bool = True
    acks: str = "all"
    codec: str = "json"  # the source topic's (pipelines.model.CODECS)
    headers: bool = False  # every record carries TRACE_HEADER = "key:seq"
    transaction_records: int = 0  # > 0: transactions of this many records (a transactional producer)
    abort_every: int = 0  # > 0: every n-th transaction is aborted, its records written again in the next
    kafka_security: KafkaSecurity = field(default_factory=KafkaSecurity)  # the password comes in the environment
    record: dict | None = None  # a record template (harness/workload/template.py); None: the harness's own records
    # streamlet -> its declared filter (an application's keeps, an output's receives: harness/workload/predicate.py)
    keeps: dict = field(default_factory=dict)
    dropped_dir: str | None = None  # where the records each filter drops are listed (dropped/<streamlet>.jsonl)
    # > 1: the workload is produced by this many processes, worker w the keys k with k % workers == w, each its own
    # ack segments (a columnar ack log); `worker` is set only in a worker's own settings (harness/workload/workers.py)
    workers: int = 1
    worker: int = 0
    # several source topics: each one's topic (its real name), keys, rate, record, codec, key prefix and partner (the
    # topic whose records it answers: harness/scenario/partners.py); the fields above then describe the first, `rate`
    # the drawn ones' together (a partner topic's records are not drawn: each answers one)
    sources: list = field(default_factory=list)
    partner_log: str | None = None  # partners.csv, where each answer a partner topic owes is logged
    # the record fields the outputs' aggregates are judged by, logged per record sent into value_log (a folder:
    # harness/evidence/values.py); none: no log
    value_fields: list = field(default_factory=list)
    value_log: str | None = None

    @property
    def partners(self) -> list[dict]:
        """The sources answering another's records (harness/workload/partners.py)."""
        return [source for source in self.sources if source.get("partner")]

    def save(self, path: Path) -> None:
        Path(path).write_text(json.dumps(asdict(self), indent=2))

    @classmethod
    def load(cls, path: Path) -> "WorkloadSettings":
        data = json.loads(Path(path).read_text())
        return cls(**{**data, "kafka_security": KafkaSecurity(**data.get("kafka_security", {}))})


def source_key_prefixes(names: list[str]) -> dict[str, str]:
    """Each source topic's prefix of its records' keys: none in a workload of one (k0000, ...); in one of several,
    the topic's name and a colon (orders:k0000: no topic name holds one), so that no key of one source is
    another's."""
    return {} if len(names) < 2 else {name: f"{name}:" for name in names}


TRACE_HEADER = "harness-trace"  # a header the generator can put on every record; the checker looks for it at each hop
