"""pipeline.json: the pipeline as it ran, resolved, written by the runner before any driver starts.

The checker learns everything about the pipeline from this file (streamlets in order, their roles and the
real topics they read and wrote, what evidence each egress leaves, what the scenario expects); it never
imports the streamlets or the scenario parser, so a user's streamlet need not be importable to judge a run.
"""

from __future__ import annotations

import json
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path

from contract.egress import AGGREGATE, EVIDENCE_KINDS
from contract.identity import problem as identity_problem
from contract.roles import EGRESS, ROLES
from harness.files import write_atomically

SCHEMA_VERSION = 1
EGRESS_EVIDENCE = (None, *EVIDENCE_KINDS)  # None: not an egress


@dataclass(frozen=True)
class StreamletDescription:
    name: str
    kind: str  # as the blueprint names it: a built-in name or package.module:Class
    role: str  # one of ROLES
    settings: dict  # every declared setting, defaults filled in
    inputs: tuple[str, ...]  # real topic names read (the workload's source topic for an ingress)
    outputs: tuple[str, ...]  # real topic names written
    drops_late_events: bool = False  # records behind a watermark are dropped by design
    window: str | None = None  # a keyed windowed aggregation: its event-time window ("10 seconds")
    window_slide: str | None = None  # a sliding window's slide ("5 seconds"; None: tumbling)
    egress_evidence: str | None = None  # an egress: "records" or "windows" tables, or "exported" (docs/evidence.md)
    audit_query: str | None = None  # an egress: the query whose audit rows are its deliveries
    identity: dict | None = None  # an output: where its records carry (key, seq) (contract/identity.py)
    written_by: str | None = None  # an output table: the application writing it (its replays and drops are its)
    # an application: it drops copies of a record arriving within this many seconds of the first (its declared
    # deduplication); copies the source holds beyond one are then not expected past it
    deduplicates_within_s: float | None = None
    observed: str | None = None  # an output: how much of its writes the harness sees (contract/applications.py)
    sources: tuple[str, ...] | None = None  # an output: the source topics its records come from (None: any upstream)


@dataclass(frozen=True)
class PipelineDescription:
    name: str  # the scenario's
    description: str
    source_topic: str
    streamlets: tuple[StreamletDescription, ...]  # from the ingress to the egresses
    expectations: dict = field(default_factory=dict)  # name -> value: what the run must show to pass
    source_header: str | None = None  # a header every source record carries (the checker looks for it at each hop)
    checks: tuple[str, ...] = ()  # the scenario's own checks (package.module:NAME), kept in checks/
    # several source topics: real topic -> the prefix of its records' keys (one source topic: empty)
    source_keys: dict = field(default_factory=dict)

    @property
    def holds_records(self) -> bool:
        """Whether an output holds records, whose copies give the end to end (not only aggregates: checks judge
        those)."""
        return any(s.role == EGRESS and s.egress_evidence != AGGREGATE for s in self.streamlets)

    @property
    def whole_topics(self) -> set[str]:
        """The topics whose recordings stay whole (JSON lines: their values are evidence, not only their records'
        identity): a running aggregate's, and those downstream of a left outer join (a row joined or padded)."""
        outer = {s.name for s in self.streamlets if ((s.settings or {}).get("joins") or {}).get("outer")}
        return {
            t
            for s in self.streamlets
            if s.role == EGRESS and (s.egress_evidence == AGGREGATE or outer & self.upstream_of(s.name))
            for t in s.inputs
        }

    @property
    def source_topics(self) -> tuple[str, ...]:
        """Every source topic the workload fed, its first first."""
        return tuple(self.source_keys) or (self.source_topic,)

    def upstream_of(self, name: str) -> set[str]:
        """Streamlet `name` and every streamlet upstream of it: writing a topic it reads, or the application writing
        it (an output table), and so on."""
        inputs = {s.name: s.inputs for s in self.streamlets}
        writers = {s.name: s.written_by for s in self.streamlets if s.written_by}
        producers = {topic: s.name for s in self.streamlets for topic in s.outputs}
        seen, todo = set(), [name]
        while todo:
            current = todo.pop()
            if current not in seen:
                seen.add(current)
                todo += [producers[t] for t in inputs.get(current, ()) if t in producers]
                todo += [writers[current]] if current in writers else []
        return seen

    def sources_of(self, name: str) -> tuple[str, ...]:
        """The source topics whose records streamlet `name` may hold: those read by it or upstream of it (of an
        output, those it declares), in source order."""
        read = {t for s in self.streamlets if s.name in self.upstream_of(name) for t in s.inputs}
        declared = next((s.sources for s in self.streamlets if s.name == name and s.sources is not None), None)
        return tuple(t for t in self.source_topics if t in read and (declared is None or t in declared))

    def save(self, path: Path) -> None:
        write_atomically(Path(path), json.dumps({"schema_version": SCHEMA_VERSION, **asdict(self)}, indent=2))

    @classmethod
    def load(cls, path: Path) -> "PipelineDescription":
        """Raises OSError, or ValueError naming the first field that is not what this schema says."""
        data = json.loads(Path(path).read_text())
        if not isinstance(data, dict) or data.get("schema_version") != SCHEMA_VERSION:
            raise ValueError(f"not a pipeline description of schema version {SCHEMA_VERSION}")
        streamlets = data.get("streamlets")
        if not isinstance(streamlets, list) or not streamlets:
            raise ValueError("streamlets: expected a non-empty list")
        return _typed(
            cls,
            {
                **data,
                "streamlets": tuple(
                    _typed(StreamletDescription, s, f"streamlets[{i}]") for i, s in enumerate(streamlets)
                ),
            },
            "",
        )


def _fits(value, hint: str) -> bool:
    """Does a JSON value fit one of this module's field annotations?"""
    if " | None" in hint:
        return value is None or _fits(value, hint.replace(" | None", ""))
    if hint.startswith("tuple[str"):
        return isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)
    if hint == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, {"str": str, "bool": bool, "dict": dict}.get(hint, object))


def _typed(cls, raw, path: str):
    """An instance of dataclass `cls` from a JSON object, every field type-checked (ValueError naming it)."""
    if not isinstance(raw, dict):
        raise ValueError(f"{path or 'the file'}: expected an object")
    values = {}
    for f in fields(cls):
        where = f"{path}.{f.name}" if path else f.name
        if f.name not in raw:
            if f.default is MISSING and f.default_factory is MISSING:
                raise ValueError(f"{where}: missing")
            continue
        value = raw[f.name]
        if f.type.startswith("tuple[") and isinstance(value, tuple):
            values[f.name] = value  # already built
            continue
        if not _fits(value, f.type):
            raise ValueError(f"{where}: expected {f.type}, got {value!r:.60}")
        values[f.name] = tuple(value) if f.type.startswith("tuple[str") and value is not None else value
    instance = cls(**values)
    for check in _CHECKS.get(cls, ()):
        problem = check(instance)
        if problem:
            raise ValueError(f"{path or 'the file'}: {problem}")
    return instance


_CHECKS = {
    StreamletDescription: (
        lambda s: None if s.role in ROLES else f"role {s.role!r} is not one of {', '.join(ROLES)}",
        lambda s: None if s.egress_evidence in EGRESS_EVIDENCE else f"unknown egress_evidence {s.egress_evidence!r}",
        lambda s: None if s.identity is None or not identity_problem(s.identity) else identity_problem(s.identity),
    ),
}
