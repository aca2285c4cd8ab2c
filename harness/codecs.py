"""Record values as the harness writes and reads them outside Spark, in a topic's codec (json or avro).

Spark's side (pipelines/context.py) uses from_json/to_json and spark-avro's from_avro/to_avro with the same
schemas (pipelines.model.Schema.avro()): plain Avro binary, no header, no schema registry. The generator
encodes the source records; the topic dumps decode every topic into the same JSON shape, so the checker
reads JSON whatever the codec was (a timestamp as Spark's to_json writes it: 2026-11-22T20:50:02.123Z).
"""

from __future__ import annotations

import io
import json
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

from pipelines.model import Schema

Encode = Callable[[dict], bytes]
Decode = Callable[[bytes], Any]


def _parsed(schema: dict):
    """fastavro and the schema's parsed form (imported only when a topic is Avro)."""
    import fastavro

    return fastavro, fastavro.parse_schema(schema)


def avro_schema(text: str) -> dict:
    """An Avro schema's JSON text (a team's .avsc file) parsed and checked; raises ValueError saying why not."""
    try:
        schema = json.loads(text)
        _parsed(schema)
    except Exception as exc:  # fastavro raises what the schema leads it to (SchemaParseException, KeyError, ...)
        raise ValueError(f"not an Avro schema: {exc}") from None
    return schema


def read_avro_schema(file: Path) -> dict:
    """A team's Avro schema file (.avsc) read and checked; raises ValueError saying what is wrong with it."""
    try:
        text = file.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read {file}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        return avro_schema(text)
    except ValueError as exc:
        raise ValueError(f"{file.name}: {exc}") from None


def avro_encoder(schema: dict) -> Encode:
    """Records -> plain Avro binary of `schema` (no header, no registry: what Spark's to_avro writes)."""
    fastavro, parsed = _parsed(schema)

    def encode(record: dict) -> bytes:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, record)
        return out.getvalue()

    return encode


def avro_decoder(schema: dict) -> Decode:
    """Plain Avro binary of `schema` -> the record as JSON data; raises ValueError when the bytes are not one."""
    fastavro, parsed = _parsed(schema)
    name = schema.get("name", "record") if isinstance(schema, dict) else "record"

    def decode(value: bytes):
        buffer = io.BytesIO(value)
        try:
            record = fastavro.schemaless_reader(buffer, parsed, None)
        except Exception as exc:  # fastavro raises what the bytes lead it to (EOFError, IndexError, ...)
            raise ValueError(f"not an Avro {name}: {type(exc).__name__}") from None
        if buffer.tell() != len(value):
            raise ValueError(f"not an Avro {name}: {len(value) - buffer.tell()} bytes left over")
        return {k: _as_json(v) for k, v in record.items()}

    return decode


def value_encoder(codec: str, schema: Schema) -> Encode:
    if codec == "json":
        return lambda record: json.dumps(record).encode()
    return avro_encoder(json.loads(schema.avro()))


def value_decoder(codec: str, schema: Schema) -> Decode:
    """bytes -> the value as JSON data; raises ValueError when the bytes are not a record of the schema."""
    if codec == "json":
        return json.loads
    return avro_decoder(json.loads(schema.avro()))


def _as_json(value):
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    return value
