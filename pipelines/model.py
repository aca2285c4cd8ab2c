"""The streamlet model: record schemas, inlets and outlets (a shape), and the streamlet contract.

As in Cloudflow, a streamlet declares what it reads (inlets) and writes
(outlets); a blueprint connects outlets to inlets through named topics. This
module imports no Spark, so blueprints can be validated before anything starts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar

from contract.egress import MAIN_QUERY

CODECS = ("json", "avro")  # how a topic's record values are encoded

SPARK_TYPES = {
    "string": "STRING",
    "long": "BIGINT",
    "int": "INT",
    "double": "DOUBLE",
    "timestamp": "TIMESTAMP",
    "batch_map": "MAP<STRING, BIGINT>",
}
AVRO_TYPES = {
    "string": "string",
    "long": "long",
    "int": "int",
    "double": "double",
    "timestamp": {"type": "long", "logicalType": "timestamp-micros"},  # what Spark's to_avro writes for a TIMESTAMP
    "batch_map": {"type": "map", "values": "long"},
}


@dataclass(frozen=True)
class Field:
    name: str
    type: str  # one of SPARK_TYPES


@dataclass(frozen=True)
class Schema:
    """A named, versioned record schema. Outlet and inlet must agree on it exactly."""

    name: str
    fields: tuple[Field, ...]
    version: int = 1

    @property
    def id(self) -> str:
        return f"{self.name}/v{self.version}"

    def ddl(self, stamps_as_text: bool = False) -> str:
        """The schema as a Spark DDL string, for from_json; with `stamps_as_text` a batch_map field is STRING, which
        from_json fills with the map's JSON text as it stands in the record."""
        return ", ".join(
            f"`{f.name}` {'STRING' if stamps_as_text and f.type == 'batch_map' else SPARK_TYPES[f.type]}"
            for f in self.fields
        )

    def avro(self) -> str:
        """The schema as Avro JSON, for from_avro / to_avro and the harness's own readers and writers: a record of
        the same fields, each nullable (a union with null), as Spark's columns are."""
        fields = [{"name": f.name, "type": ["null", AVRO_TYPES[f.type]], "default": None} for f in self.fields]
        return json.dumps({"type": "record", "name": self.name, "namespace": "harness", "fields": fields})


# A port's codec: None follows its topic's (the blueprint's `topics: {<outlet>: {codec: avro}}`, json by default);
# a port that pins one ("json" or "avro") can only be connected through topics of that codec.
@dataclass(frozen=True)
class Inlet:
    name: str
    schema: Schema
    codec: str | None = None


@dataclass(frozen=True)
class Outlet:
    name: str
    schema: Schema
    codec: str | None = None
    partition_key: str = "key"  # records are keyed (and so partitioned) by this field


@dataclass(frozen=True)
class Shape:
    inlets: tuple[Inlet, ...] = ()
    outlets: tuple[Outlet, ...] = ()

    def inlet(self, name: str) -> Inlet | None:
        return next((i for i in self.inlets if i.name == name), None)

    def outlet(self, name: str) -> Outlet | None:
        return next((o for o in self.outlets if o.name == name), None)


# What the workload's generator writes to the source topic, in the source topic's codec; an ingress reads it.
SOURCE_RECORD = Schema(
    "SourceRecord",
    (Field("key", "string"), Field("seq", "long"), Field("event_time_ms", "long"), Field("payload", "string")),
)

# Every hop stamps the batch that wrote a record into `batches` ({streamlet: batch id}),
# so a replayed batch is visible downstream as evidence.
SEQ_RECORD = Schema(
    "SeqRecord",
    (
        Field("key", "string"),
        Field("seq", "long"),
        Field("event_time", "timestamp"),
        Field("payload", "string"),
        Field("batches", "batch_map"),
    ),
)

WINDOW_COUNT = Schema(
    "WindowCount",
    (
        Field("key", "string"),
        Field("window_start", "timestamp"),
        Field("window_end", "timestamp"),
        Field("count", "long"),
        Field("batches", "batch_map"),
    ),
)


_TYPE_NAMES = {bool: "true or false", int: "an integer", float: "a number", str: "text"}


@dataclass(frozen=True)
class Setting:
    """One setting a streamlet accepts: its default (the value's type is the default's), what it means, and
    optionally the values it may take. A blueprint's value is checked against it before anything starts."""

    default: Any
    description: str = ""
    choices: tuple = ()
    minimum: float | None = None
    maximum: float | None = None

    def problem(self, value: Any) -> str | None:
        """Why `value` is not acceptable, or None."""
        kind = type(self.default)
        fits = isinstance(value, kind) and not (kind is not bool and isinstance(value, bool))
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            fits = True
        if not fits:
            return f"expected {_TYPE_NAMES.get(kind, kind.__name__)}, got {value!r}"
        if self.choices and value not in self.choices:
            return f"expected one of {', '.join(map(str, self.choices))}, got {value!r}"
        if (self.minimum is not None and value < self.minimum) or (self.maximum is not None and value > self.maximum):
            return f"expected a number from {self.minimum} to {self.maximum}, got {value!r}"
        return None


class Streamlet:
    """What a streamlet is, declared on its class, and the queries it starts (`build`).

    - `shape`: its inlets and outlets; `reads_source`: it reads the workload's source topic (an ingress).
      A streamlet without outlets is an egress.
    - `settings`: name -> Setting, the only settings a blueprint may give it.
    - `kind`: the short name of a built-in streamlet (pipelines/builtin/); a user's streamlet has none:
      a blueprint names it `package.module:Class`.
    - `egress_evidence`: an egress's evidence in the run directory, which the checker reads: "records" or
      "windows" (the built-in store's tables, docs/evidence.md), or "exported" (an egress of your own: it audits
      each batch with ctx.audit and exports its final state with `export_state`).
    - `spark_jars`: jar sets its driver needs beyond the Kafka connector, each fetched by Maven from the
      project's jars/<name>/pom.xml (e.g. "delta"); `spark_conf`: Spark settings its session needs.
    """

    kind: ClassVar[str | None] = None
    shape: ClassVar[Shape] = Shape()
    settings: ClassVar[dict[str, Setting]] = {}
    reads_source: ClassVar[bool] = False
    description: ClassVar[str] = ""
    egress_evidence: ClassVar[str | None] = None
    spark_jars: ClassVar[tuple[str, ...]] = ()
    spark_conf: ClassVar[dict[str, str]] = {}

    @classmethod
    def drops_late_events(cls, settings: dict) -> bool:
        """True when, with these settings, records behind a watermark are dropped by design."""
        return False

    @classmethod
    def event_time_window(cls, settings: dict) -> str | None:
        """A keyed windowed aggregation: the length of its tumbling event-time windows (Spark's interval text)."""
        return None

    @classmethod
    def event_time_slide(cls, settings: dict) -> str | None:
        """A sliding windowed aggregation: how far its windows slide (None: tumbling windows)."""
        return None

    @classmethod
    def audit_query(cls, settings: dict) -> str:
        """An egress: the query whose audit rows are its deliveries."""
        return MAIN_QUERY

    def export_state(self, ctx):  # pragma: no cover - interface
        """An egress of your own ("exported"): yield every record in its store at the end of the run, each a
        mapping with at least key and seq. Run once after the drivers stopped, in a process without Spark."""
        raise NotImplementedError

    def export_deliveries(self, ctx):
        """An egress of your own whose sink cannot call ctx.audit (Spark's own sinks): yield every record it
        received, as its files show them (mappings with key, seq, batch_id, event_time_ms, batches, topic,
        kafka_partition, kafka_offset, received_ms), in the order received. None: it audits with ctx.audit."""
        return None

    def build(self, ctx) -> list:  # pragma: no cover - interface
        """Start this streamlet's streaming queries (through `ctx`) and return them."""
        raise NotImplementedError
