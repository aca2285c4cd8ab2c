"""The topic-dump format (topics/<topic>.jsonl, at-risk/<streamlet>-<n>.jsonl): one JSON line per Kafka record.

    {"partition": P, "offset": O, "timestamp_ms": T, "key": "k0001", "value": {...the record's JSON value...}}

One writer for every file in this format, so the checker reads them all the same way.
"""

from __future__ import annotations

import json


def dump_line(record) -> str:
    """A kafka-python ConsumerRecord as one line of a topic dump (a value that is not JSON is kept as text)."""
    try:
        value = json.loads(record.value) if record.value is not None else None
    except ValueError:
        value = record.value.decode("utf-8", "replace")
    return json.dumps({"partition": record.partition, "offset": record.offset, "timestamp_ms": record.timestamp,
                       "key": record.key.decode("utf-8", "replace") if record.key else None, "value": value}) + "\n"
