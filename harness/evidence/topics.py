"""The two forms of a run's topic recordings, one record of Kafka per line or per row.

JSON lines (topics/<topic>.jsonl), every record whole, what a person reads:

    {"partition": P, "offset": O, "timestamp_ms": T, "key": "k0001", "value": {...the record's value, as JSON...}}

and "headers": {name: text} when the record has headers.

Columnar (topics/<topic>/NNNNNN.arrows, contract/segments.py), what the checker needs of each record and nothing
else: partition, offset, timestamp_ms, `key` and `seq` (the value's, the record's identity; seq null where the value's
is not an integer, its text then in `seq_text`), `count` (a window's), `headers` (a map) and one `batch.<streamlet>`
column per batch stamp. A Kafka output's recording has its `identity` read into `key` and `seq`. A long run's
recordings are about a tenth of the JSON's size and read without parsing.

One writer for each form, so the checker reads every recording the same way.
"""

from __future__ import annotations

import json
from typing import Any, Callable

import pyarrow as pa

from contract.identity import IdentityReader
from contract.segments import identity_columns

BATCH_PREFIX = "batch."  # a column per streamlet: the batch a record was written in there (the value's `batches`)


def dump_record(record, decode: Callable[[bytes], Any] = json.loads) -> dict:
    """A kafka-python ConsumerRecord as a topic dump's line (a dict), its value decoded by `decode` (the topic's
    codec, harness.codecs: a dump is JSON whatever the codec); a value that does not decode is kept as text."""
    try:
        value = decode(record.value) if record.value is not None else None
    except ValueError:
        value = record.value.decode("utf-8", "replace")
    line = {
        "partition": record.partition,
        "offset": record.offset,
        "timestamp_ms": record.timestamp,
        "key": record.key.decode("utf-8", "replace") if record.key else None,
        "value": value,
    }
    headers = getattr(record, "headers", None)  # a record read by another client may have none
    if headers:
        line["headers"] = {name: (data or b"").decode("utf-8", "replace") for name, data in headers}
    return line


def dump_line(record, decode: Callable[[bytes], Any] = json.loads) -> str:
    return json.dumps(dump_record(record, decode)) + "\n"


class RecordingColumns:
    """Dump lines -> record batches of the columnar form. Keeps the batch stamps it has seen so that batch after
    batch has the same columns (a segment holds one schema: a new stamp starts a new segment). With `identity` (an
    output's, contract/identity.py) `key` and `seq` are read where it says, not from the value's key and seq."""

    def __init__(self, identity: dict | None = None) -> None:
        self.stamps: list[str] = []
        self._identity = IdentityReader(identity) if identity else None

    def batch(self, lines: list[dict]) -> pa.RecordBatch:
        values = [line.get("value") if isinstance(line.get("value"), dict) else {} for line in lines]
        if self._identity is not None:
            keys, seqs = zip(*map(self._identity, lines)) if lines else ((), ())
        else:
            keys, seqs = [v.get("key") for v in values], [v.get("seq") for v in values]
        columns = {
            "partition": pa.array([line["partition"] for line in lines], pa.int32()),
            "offset": pa.array([line["offset"] for line in lines], pa.int64()),
            "timestamp_ms": pa.array([line.get("timestamp_ms") or 0 for line in lines], pa.int64()),
            **identity_columns(keys, seqs),
        }
        if any("count" in v for v in values):
            columns["count"] = pa.array(
                [v.get("count") if isinstance(v.get("count"), int) else None for v in values], pa.int64()
            )
        if any(line.get("headers") for line in lines):
            columns["headers"] = pa.array(
                [list((line.get("headers") or {}).items()) for line in lines], pa.map_(pa.string(), pa.string())
            )
        stamps = [v.get("batches") if isinstance(v.get("batches"), dict) else {} for v in values]
        for name in dict.fromkeys(n for s in stamps for n in s):
            if name not in self.stamps:
                self.stamps.append(name)
        for name in self.stamps:
            columns[BATCH_PREFIX + name] = pa.array(
                [s.get(name) if isinstance(s.get(name), int) else None for s in stamps], pa.int32()
            )
        return pa.RecordBatch.from_pydict(columns)
