"""Where a record of an application's own format carries its identity (key, seq), and reading it back.

An identity is a mapping: `key` and `seq`, each a path to a field, or `id`, a path to one text field composed
as `format` says (its `{key}` and `{seq}`, e.g. "{key}-{seq}"). A path names a field of the record's value
("customer", "order.no" for a nested one), or the Kafka record's own parts: "kafka.key" (the message key) or
"kafka.header.NAME" (a header). The generator writes identities so and the checker reads them back from the
topic dumps (one line per record: {"key", "value", "headers", ...}).
"""

from __future__ import annotations

import re

KEY, SEQ, ID, FORMAT = "key", "seq", "id", "format"
MESSAGE_KEY = "kafka.key"
HEADER = "kafka.header."
DEFAULT_FORMAT = "{key}-{seq}"


def problem(identity: dict) -> str | None:
    """Why an identity mapping is not one (None: it is)."""
    if not isinstance(identity, dict):
        return "expected a mapping with key and seq, or id (and format)"
    fields = set(identity)
    if fields - {KEY, SEQ, ID, FORMAT}:
        return f"unknown field {sorted(fields - {KEY, SEQ, ID, FORMAT})[0]!r} (expected key and seq, or id and format)"
    if ID in fields:
        if fields & {KEY, SEQ}:
            return "give key and seq, or id, not both"
        fmt = identity.get(FORMAT, DEFAULT_FORMAT)
        if not isinstance(fmt, str) or fmt.count("{key}") != 1 or fmt.count("{seq}") != 1:
            return f"format: expected text with {{key}} and {{seq}} once each, got {fmt!r}"
    elif fields != {KEY, SEQ}:
        return "expected key and seq (paths to two fields), or id (a path to one composed field)"
    for name in fields - {FORMAT}:
        path = identity[name]
        if not isinstance(path, str) or not path or any(not part for part in path.split(".")):
            return f"{name}: expected a field path like 'order_id' or 'order.id', got {path!r}"
    return None


def compose(fmt: str, key: str, seq: int) -> str:
    return fmt.replace("{key}", key).replace("{seq}", str(seq))


def _pattern(fmt: str) -> re.Pattern:
    parts = re.split(r"(\{key\}|\{seq\})", fmt)
    body = "".join({"{key}": "(?P<key>.+?)", "{seq}": "(?P<seq>-?[0-9]+)"}.get(p, re.escape(p)) for p in parts)
    return re.compile(body + r"\Z", re.S)


def field_at(record: dict, path: str):
    if path == MESSAGE_KEY:
        return record.get("key")
    if path.startswith(HEADER):
        return (record.get("headers") or {}).get(path[len(HEADER) :])
    node = record.get("value")
    for part in path.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


class IdentityReader:
    """Reads (key, seq) from topic-dump lines by one identity mapping (a value it cannot read: None)."""

    def __init__(self, identity: dict):
        self.identity = identity
        self._pattern = _pattern(identity.get(FORMAT, DEFAULT_FORMAT)) if ID in identity else None

    def __call__(self, record: dict) -> tuple[object, object]:
        if self._pattern is None:
            return field_at(record, self.identity[KEY]), field_at(record, self.identity[SEQ])
        composed = field_at(record, self.identity[ID])
        match = self._pattern.match(composed) if isinstance(composed, str) else None
        return (match["key"], int(match["seq"])) if match else (None, composed)
