"""The topic-dump format (topics/<topic>.jsonl): one JSON line per Kafka record.

    {"partition": P, "offset": O, "timestamp_ms": T, "key": "k0001", "value": {...the record's value, as JSON...}}

and "headers": {name: text} when the record has headers.

One writer for every file in this format, so the checker reads them all the same way.
"""

from __future__ import annotations

import json
from typing import Any, Callable


def dump_line(record, decode: Callable[[bytes], Any] = json.loads) -> str:
    """A kafka-python ConsumerRecord as one line of a topic dump, its value decoded by `decode` (the topic's
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
    return json.dumps(line) + "\n"
