"""The streamlet model: record schemas, inlets and outlets (a shape), and the streamlet contract.

As in Cloudflow, a streamlet declares what it reads (inlets) and writes
(outlets); a blueprint connects outlets to inlets through named topics. This
module imports no Spark, so blueprints can be validated before anything starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

SPARK_TYPES = {
    "string": "STRING",
    "long": "BIGINT",
    "int": "INT",
    "double": "DOUBLE",
    "timestamp": "TIMESTAMP",
    "batch_map": "MAP<STRING, BIGINT>",
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

    def ddl(self) -> str:
        """The schema as a Spark DDL string, for from_json."""
        return ", ".join(f"`{f.name}` {SPARK_TYPES[f.type]}" for f in self.fields)


@dataclass(frozen=True)
class Inlet:
    name: str
    schema: Schema
    codec: str = "json"


@dataclass(frozen=True)
class Outlet:
    name: str
    schema: Schema
    codec: str = "json"
    partition_key: str = "key"  # records are keyed (and so partitioned) by this field


@dataclass(frozen=True)
class Shape:
    inlets: tuple[Inlet, ...] = ()
    outlets: tuple[Outlet, ...] = ()

    def inlet(self, name: str) -> Inlet | None:
        return next((i for i in self.inlets if i.name == name), None)

    def outlet(self, name: str) -> Outlet | None:
        return next((o for o in self.outlets if o.name == name), None)


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


@dataclass(frozen=True)
class StreamletSpec:
    """What a streamlet kind is: its shape and the settings it accepts (with defaults)."""

    kind: str
    shape: Shape
    settings: dict = field(default_factory=dict)
    source_topic: bool = False  # reads the external source topic (an ingress)
    description: str = ""


class Streamlet:
    """Base of the runnable streamlets in pipelines/: `spec` says the shape, `build` the queries."""

    spec: ClassVar[StreamletSpec]

    def build(self, ctx):  # pragma: no cover - interface
        """Start this streamlet's streaming queries and return them."""
        raise NotImplementedError
