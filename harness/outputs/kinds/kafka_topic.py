"""A Kafka topic an application writes (`topic`): recorded as every hop is, its records' identity read where the
output says (`identity`), in the team's Avro schema when it gives one (`avro`); or a running aggregate's values per
group (`aggregate`, harness/outputs/aggregate.py), recorded whole. Nothing to prepare or export: the run's recording
of the topic is the evidence."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from contract.applications import KAFKA_OUTPUT
from contract.egress import AGGREGATE, TOPIC
from harness.codecs import read_avro_schema
from harness.evidence.recording_forms import COLUMNAR
from harness.field import Field
from harness.outputs.aggregate import parse_aggregate
from harness.outputs.kind import IDENTITY, RECEIVES, OutputKind, OutputSpec

RECORDED_IDENTITY = {"key": "key", "seq": "seq"}  # where _recorded_identities puts them


class TopicSink:
    """A Kafka output in a run (a Sink, harness/outputs/kind.py): its records are the topic's recording."""

    def __init__(self, run, name: str, settings: dict):
        self.run, self.name, self.identity = run, name, settings["identity"]

    def prepare(self) -> None:
        return None

    def placeholders(self) -> dict[str, str]:
        return {}  # ${topic.NAME} is every topic's, this one's too

    def reader(self) -> tuple[dict, Callable[[], list[dict]]] | None:
        if self.identity is None:
            return None  # an aggregate's values: no record's copy
        topic = self.run.output_topic(self.name)
        if self.run.recordings == COLUMNAR:  # the identity was read into key and seq as it was recorded
            folder = self.run.layout.topic_segments(topic)
            return RECORDED_IDENTITY, lambda: _recorded_identities(folder)
        dump = self.run.layout.topic_dump(topic)
        return self.identity, lambda: _dump_lines(dump)

    def probe(self) -> None:
        return None  # a kill's moment is the job's batch, seen in its checkpoint

    def export(self) -> None:
        return None


def _recorded_identities(folder: Path) -> list[dict]:
    """The identities a columnar recording being written holds so far, as lines with a value of key and seq."""
    from contract.segments import read_segments  # here: Arrow only where a run reads its recording

    table, _ = read_segments(folder, ["key", "seq"])
    rows = zip(table["key"].to_pylist(), table["seq"].to_pylist()) if table is not None else ()
    return [{"value": {"key": key, "seq": seq}} for key, seq in rows]


def _dump_lines(path: Path) -> list[dict]:
    """The complete lines of a topic dump being written."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in text[: text.rfind("\n") + 1].splitlines() if line.strip()]


def _parse(spec: OutputSpec) -> dict:
    """The `topic` (one an application writes), where its records' `identity` is read, what it `receives`, the
    `avro` schema its records are written in, or the `aggregate` it holds instead of records."""
    topic = spec.values["topic"]
    if topic not in spec.written:
        raise spec.error("topic", f"no application writes {topic!r} (written: {', '.join(spec.written)})")
    aggregate = parse_aggregate(spec)
    return {
        "topic": topic,
        "identity": None if aggregate else spec.identity(),
        "aggregate": aggregate,
        "receives": spec.receives(),
        "avro": _avro_schema(spec),
    }


def _avro_schema(spec: OutputSpec) -> dict | None:
    """The Avro schema (an .avsc file) a Kafka output's records are written in (Spark's to_avro: plain binary)."""
    name = spec.values["avro"]
    if name is None:
        return None
    try:
        return read_avro_schema(Path(name) if Path(name).is_absolute() else (spec.folder or Path.cwd()) / name)
    except ValueError as exc:
        raise spec.error("avro", str(exc)) from None


KIND = OutputKind(
    "kafka-topic",
    KAFKA_OUTPUT,
    "a Kafka topic the job writes",
    marker="topic",
    fields=(
        Field("topic", str, None, "the topic an application writes", required=True),
        IDENTITY,
        RECEIVES,
        Field("avro", str, None, "the Avro schema (an .avsc file) its records are written in"),
        Field(
            "aggregate",
            dict,
            None,
            "a running aggregate's values per group, instead of records (outputs.NAME.aggregate)",
        ),
    ),
    parse=_parse,
    evidence=lambda settings: AGGREGATE if settings["aggregate"] else TOPIC,
    sink=TopicSink,
)
