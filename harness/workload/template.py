"""Record templates: source records in the application's own format (the scenario's `workload.record`).

A template names where each record carries its identity (contract/identity.py: the key and seq fields, or one
composed field) and gives every other field a value: a constant, or a generator drawn from the run's seed, so the
same seed sends the same records. Generators (one keyword each, with options):

    {int: [LOW, HIGH]}                       an integer in the range
    {decimal: [LOW, HIGH], scale: 2}         a number rounded to `scale` digits
    {choice: [A, B]} / {choice: {A: 3, B: 1}} one of the values (weighted)
    {text: LENGTH}                           letters and digits
    {event_time: iso} / {event_time: ms}     the record's event time (text like 2026-11-26T10:00:00.123Z, or ms)
    {object: {FIELD: SPEC, ...}}             a nested object
    {array: SPEC, length: [LOW, HIGH]}       a list of values
    {const: VALUE}                           VALUE as it is (a mapping too)

and any of them may add `nulls: SHARE` (that share of its values are null). A plain value is a constant.

Records are JSON, or Avro binary of the team's own schema (`avro: FILE.avsc`, plain binary as Spark's from_avro reads
it), or that Avro in the Confluent wire format (`schema_id: N` besides: the magic byte 0 and the schema id, four bytes
big-endian, before each body, as a Schema Registry's serializer frames it; a job cutting five bytes reads the body; with
`registry: true` the run serves the schema under that id, subject `TOPIC-value`, to a job that looks it up:
harness/workload/registry.py). Or text: `delimited: {columns: [FIELD, ...], separator: ","}` writes each record as one
line of those fields' values in that order (a nested value as JSON text, a null as nothing), as a job splitting its
lines reads it; `line: "TEXT {FIELD} TEXT"` writes each record as that line of text, each `{FIELD}` its value (a null as
nothing), as a job matching log lines with a pattern reads it; `json_string: true` writes the JSON record encoded again
as a JSON string (JSON inside JSON). Headers: `headers: {NAME: SPEC, ...}` puts each on every record, its value drawn as
a field's is and sent as text (a text as it is, any other value as JSON, a null as a header without a value), as a job
reading CloudEvents' `ce_*` headers finds them; the identity may go in one too (`kafka.header.NAME`). A template may
instead replay a sample of the team's own records: `sample: FILE` (JSON lines, one object each, read when the scenario
is; its path starts at the scenario's folder). Records are its lines in order, over and over, each with `fields` set
over it (an event time, say) and the identity written where the template says.
"""

from __future__ import annotations

import copy
import json
import random
import string
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from contract.identity import DEFAULT_FORMAT, FORMAT, HEADER, ID, KEY, MESSAGE_KEY, SEQ, compose
from contract.identity import problem as identity_problem
from harness.codecs import avro_encoder, read_avro_schema

GENERATORS = ("int", "decimal", "choice", "text", "event_time", "object", "array", "const")
OPTIONS = {"decimal": ("scale",), "array": ("length",)}  # a generator's options besides `nulls`
FORMATS = ("avro", "schema_id", "delimited", "line", "json_string")  # how a template's records are encoded
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


class TemplateError(ValueError):
    """A template that is not one; `path` is the field it is about."""

    def __init__(self, path: str, message: str):
        super().__init__(f"{path}: {message}")
        self.path = path


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _range(value: Any, path: str, integers: bool) -> None:
    kind = int if integers else (int, float)
    if (
        not isinstance(value, list)
        or len(value) != 2
        or not all(isinstance(v, kind) and not isinstance(v, bool) for v in value)
        or value[0] > value[1]
    ):
        raise TemplateError(path, f"expected [LOW, HIGH] ({'integers' if integers else 'numbers'}), got {value!r}")


def _check_spec(spec: Any, path: str) -> None:
    """Raise TemplateError when `spec` is not a field's value as the module docstring says."""
    if not isinstance(spec, dict):
        return  # a constant
    keyword = [k for k in spec if k in GENERATORS]
    if len(keyword) != 1:
        raise TemplateError(path, f"expected one of {', '.join(GENERATORS)} (a mapping constant: {{const: ...}})")
    (kind,) = keyword
    extra = set(spec) - {kind, "nulls", *OPTIONS.get(kind, ())}
    if extra:
        raise TemplateError(f"{path}.{sorted(extra)[0]}", f"unknown option of {kind}")
    nulls = spec.get("nulls", 0)
    if not _number(nulls) or not 0 <= nulls <= 1:
        raise TemplateError(f"{path}.nulls", f"expected a share from 0 to 1, got {nulls!r}")
    value = spec[kind]
    if kind in ("int", "decimal"):
        _range(value, f"{path}.{kind}", kind == "int")
        scale = spec.get("scale", 2)
        if not isinstance(scale, int) or isinstance(scale, bool) or not 0 <= scale <= 12:
            raise TemplateError(f"{path}.scale", f"expected an integer from 0 to 12, got {scale!r}")
    elif kind == "choice":
        weights = value.values() if isinstance(value, dict) else None
        if not value or not isinstance(value, (list, dict)) or (weights and not all(_number(w) for w in weights)):
            raise TemplateError(f"{path}.choice", f"expected a list of values, or value: weight, got {value!r}")
    elif kind == "text":
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 100_000:
            raise TemplateError(f"{path}.text", f"expected a length from 0 to 100000, got {value!r}")
    elif kind == "event_time":
        if value not in ("iso", "ms"):
            raise TemplateError(f"{path}.event_time", f"expected iso or ms, got {value!r}")
    elif kind == "object":
        if not isinstance(value, dict):
            raise TemplateError(f"{path}.object", f"expected a mapping of fields, got {value!r}")
        for name, field in value.items():
            _check_spec(field, f"{path}.object.{name}")
    elif kind == "array":
        _check_spec(value, f"{path}.array")
        _range(spec.get("length", [0, 3]), f"{path}.length", True)


def parse_template(raw: Any, path: str = "workload.record", folder: Path | None = None) -> dict:
    """A validated template: {identity, fields, message_key, sample} (JSON, as the generator's settings carry it;
    `sample` the sample file's records, or None)."""
    if not isinstance(raw, dict):
        raise TemplateError(path, f"expected a mapping with identity and fields, got {raw!r}")
    allowed = ("identity", "fields", "message_key", "sample", "headers", "registry", *FORMATS)
    extra = set(raw) - set(allowed)
    if extra:
        raise TemplateError(f"{path}.{sorted(extra)[0]}", f"unknown field (expected {', '.join(allowed)})")
    formats = [name for name in ("avro", "delimited", "line", "json_string") if raw.get(name)]  # one of them
    if len(formats) > 1:
        raise TemplateError(f"{path}.{formats[1]}", f"one format for the records: {formats[0]} or {formats[1]}")
    identity = raw.get("identity")
    problem = identity_problem(identity)
    if problem:
        raise TemplateError(f"{path}.identity", problem)
    fields = raw.get("fields", {})
    if not isinstance(fields, dict):
        raise TemplateError(f"{path}.fields", f"expected a mapping of field names, got {fields!r}")
    for name, spec in fields.items():
        _check_spec(spec, f"{path}.fields.{name}")
    for place in (identity[k] for k in (KEY, SEQ, ID) if k in identity):
        if place != MESSAGE_KEY and not place.startswith(HEADER):
            _check_place(fields, place.split("."), f"{path}.fields")
    sample = _sample(raw["sample"], f"{path}.sample", folder) if "sample" in raw else None
    in_value = [identity[k] for k in (KEY, SEQ, ID) if k in identity and identity[k] != MESSAGE_KEY]
    for place in (p for p in in_value if sample and not p.startswith(HEADER)):
        parts = place.split(".")
        for number, record in enumerate(sample, 1):
            node = record
            for part in parts[:-1]:
                node = node.get(part, {}) if isinstance(node, dict) else node
            if not isinstance(node, dict):
                raise TemplateError(f"{path}.sample", f"record {number}: {place} cannot be set (not inside an object)")
    sampled = {name for record in sample or () for name in record}
    message_key = raw.get("message_key", KEY)
    if message_key not in (KEY, None) and message_key not in fields and message_key not in sampled:
        raise TemplateError(f"{path}.message_key", f"expected key, null or a field of fields, got {message_key!r}")
    template = {"identity": dict(identity), "fields": fields, "message_key": message_key, "sample": sample}
    template["avro"] = _avro(raw["avro"], f"{path}.avro", folder, template) if "avro" in raw else None
    template["schema_id"] = _schema_id(raw, path) if "schema_id" in raw else None
    template["registry"] = raw.get("registry", False)
    if template["registry"] not in (True, False) or (template["registry"] and not template["schema_id"]):
        raise TemplateError(f"{path}.registry", "true serves the schema of schema_id in a registry: give schema_id")
    template["delimited"] = _delimited(raw["delimited"], f"{path}.delimited", template) if "delimited" in raw else None
    template["line"] = _line(raw["line"], f"{path}.line", template) if "line" in raw else None
    json_string = raw.get("json_string", False)
    if not isinstance(json_string, bool):
        raise TemplateError(f"{path}.json_string", f"expected true or false, got {json_string!r}")
    template["json_string"] = json_string
    template["headers"] = _headers(raw["headers"], f"{path}.headers", identity) if "headers" in raw else {}
    return template


def _headers(raw: Any, path: str, identity: dict) -> dict:
    """Each header's spec, checked as a field's; a header the identity is written to is not given twice."""
    if not isinstance(raw, dict):
        raise TemplateError(path, f"expected a mapping of header names, got {raw!r}")
    for name, spec in raw.items():
        if not name:
            raise TemplateError(path, "a header needs a name")
        if HEADER + name in identity.values():
            raise TemplateError(f"{path}.{name}", "is where the identity goes: leave it out")
        _check_spec(spec, f"{path}.{name}")
    return raw


def _delimited(raw: Any, path: str, template: dict) -> dict:
    """Each record a line of these `columns`' values, split by `separator` (one character): each a field of a record
    the template makes."""
    if not isinstance(raw, dict) or set(raw) - {"columns", "separator"}:
        raise TemplateError(path, f"expected {{columns: [FIELD, ...], separator: ','}}, got {raw!r}")
    columns, separator = raw.get("columns"), raw.get("separator", ",")
    if not isinstance(separator, str) or len(separator) != 1 or separator in "\r\n":
        raise TemplateError(f"{path}.separator", f"expected one character (not a line break), got {separator!r}")
    if not isinstance(columns, list) or not columns or not all(isinstance(c, str) for c in columns):
        raise TemplateError(
            f"{path}.columns", f"expected the records' field names in the line's order, got {columns!r}"
        )
    value, _, _ = RecordMaker(template, 0).make("key", 0, 0)
    missing = [c for c in columns if c not in value]
    if missing:
        raise TemplateError(f"{path}.columns", f"{missing[0]!r} is not a field of the records ({', '.join(value)})")
    return {"columns": columns, "separator": separator}


def _line(raw: Any, path: str, template: dict) -> str:
    """A line of text with `{FIELD}` where each field's value goes (`{{` and `}}` for braces): each a field of a
    record the template makes, with no format of its own."""
    try:
        pieces = list(string.Formatter().parse(raw)) if isinstance(raw, str) else None
    except ValueError as exc:
        raise TemplateError(path, f"{exc} in {raw!r}") from None
    names = [name for _, name, _, _ in pieces or () if name is not None]
    if not names or "\n" in raw or "\r" in raw:
        raise TemplateError(path, f"expected one line of text with a {{FIELD}} in it, got {raw!r}")
    value, _, _ = RecordMaker(template, 0).make("key", 0, 0)
    for _, name, spec, conversion in pieces:
        if name is not None and (spec or conversion or name not in value):
            why = "takes a field's name only" if spec or conversion else "is not a field of the records"
            raise TemplateError(path, f"{{{name}}} {why} ({', '.join(value)})")
    return raw


def _line_encoder(line: str) -> Callable[[dict], bytes]:
    pieces = list(string.Formatter().parse(line))
    return lambda value: "".join(
        text + ("" if name is None else _text(value.get(name))) for text, name, _, _ in pieces
    ).encode()


def _header(value: Any) -> bytes | None:
    return None if value is None else _text(value).encode()


def _text(value: Any) -> str:
    return "" if value is None else value if isinstance(value, str) else json.dumps(value)


MAX_SCHEMA_ID = 2**31 - 1  # a Schema Registry's ids are positive 32-bit integers


def _schema_id(raw: dict, path: str) -> int:
    """The id the Confluent wire format puts before each Avro body: of the template's own schema (`avro`)."""
    value = raw["schema_id"]
    if "avro" not in raw:
        raise TemplateError(f"{path}.schema_id", "frames Avro records: give the schema too (avro: FILE.avsc)")
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_SCHEMA_ID:
        raise TemplateError(f"{path}.schema_id", f"expected a schema id from 1 to {MAX_SCHEMA_ID:,}, got {value!r}")
    return value


def _file(name: Any, path: str, folder: Path | None, what: str) -> Path:
    if not isinstance(name, str) or not name:
        raise TemplateError(path, f"expected the path of {what}, got {name!r}")
    return Path(name) if Path(name).is_absolute() else (folder or Path.cwd()) / name


def _avro(name: Any, path: str, folder: Path | None, template: dict) -> dict:
    """The team's Avro schema (an .avsc file), checked against a record of the template."""
    file = _file(name, path, folder, "an Avro schema file (.avsc)")
    try:
        schema = read_avro_schema(file)
    except ValueError as exc:
        raise TemplateError(path, str(exc)) from None
    value, _, _ = RecordMaker(template, 0).make("key", 0, 0)
    try:
        avro_encoder(schema)(value)
    except Exception as exc:  # fastavro says what does not fit (ValueError, TypeError, ...)
        raise TemplateError(path, f"a record of the template does not fit {file.name}: {exc}") from None
    return schema


def template_encoder(template: dict) -> Callable[[dict], bytes]:
    """A template's records -> the bytes the source topic carries: JSON, Avro of the team's schema (framed in the
    Confluent wire format where the template gives its schema id), a delimited line, a line of text, or JSON inside a
    JSON string."""
    if template.get("schema_id"):
        header, encode = b"\x00" + template["schema_id"].to_bytes(4, "big"), avro_encoder(template["avro"])
        return lambda value: header + encode(value)
    if template.get("avro"):
        return avro_encoder(template["avro"])
    if template.get("delimited"):
        columns, separator = template["delimited"]["columns"], template["delimited"]["separator"]
        return lambda value: separator.join(_text(value.get(c)) for c in columns).encode()
    if template.get("line"):
        return _line_encoder(template["line"])
    if template.get("json_string"):
        return lambda value: json.dumps(json.dumps(value)).encode()
    return lambda value: json.dumps(value).encode()


MAX_SAMPLE_BYTES = 16 * 1024 * 1024  # carried whole in the generator's settings


def _sample(name: Any, path: str, folder: Path | None) -> list[dict]:
    """The records of a sample file: JSON lines, each an object (a bad one named by its line)."""
    file = _file(name, path, folder, "a JSON-lines file")
    try:
        if file.stat().st_size > MAX_SAMPLE_BYTES:
            raise TemplateError(path, f"{file}: larger than {MAX_SAMPLE_BYTES // 2**20} MB (a sample, not a dataset)")
        lines = file.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise TemplateError(path, f"cannot read {file}: {getattr(exc, 'strerror', None) or exc}") from None
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise TemplateError(path, f"{file.name} line {number}: not JSON ({exc})") from None
        if not isinstance(record, dict):
            raise TemplateError(path, f"{file.name} line {number}: expected a JSON object, got {line[:60]!r}")
        records.append(record)
    if not records:
        raise TemplateError(path, f"{file.name}: no records")
    return records


def record_fields(template: dict) -> list[str]:
    """The top-level fields of a template's records (its fields and where the identity goes in the value)."""
    identity = template["identity"]
    places = [identity[k] for k in (KEY, SEQ, ID) if k in identity]
    value_places = [p.split(".")[0] for p in places if p != MESSAGE_KEY and not p.startswith(HEADER)]
    sampled = [name for record in template.get("sample") or () for name in record]
    return list(dict.fromkeys([*sampled, *template["fields"], *value_places]))


def _check_place(fields: dict, parts: list[str], path: str) -> None:
    """The identity's field must be free: not a field of the template, nor inside one that is not an object."""
    name, rest = parts[0], parts[1:]
    if name not in fields:
        return
    spec = fields[name]
    if not rest or not (isinstance(spec, dict) and "object" in spec and "nulls" not in spec):
        raise TemplateError(f"{path}.{name}", "is where the identity goes: leave it out (or make it an object)")
    _check_place(spec["object"], rest, f"{path}.{name}.object")


class RecordMaker:
    """Records of one template, drawn from one seed: make(key, seq, event_ms) -> (value, message key, headers)."""

    def __init__(self, template: dict, seed: int):
        self.identity, self.fields = template["identity"], template["fields"]
        self.message_key = template["message_key"]
        self.headers = template.get("headers") or {}
        self.sample = template.get("sample") or [{}]
        self.made = 0
        self.rng = random.Random(f"record-template-{seed}")

    def make(
        self, key: str, seq: int, event_ms: int, fields: dict | None = None
    ) -> tuple[dict, str | None, list[tuple[str, bytes]]]:
        """A record: the template's fields drawn, `fields` set over them, the identity written where it goes."""
        value = copy.deepcopy(self.sample[self.made % len(self.sample)])
        self.made += 1
        value.update({name: self._value(spec, event_ms) for name, spec in self.fields.items()})
        value.update(fields or {})
        headers = [(name, _header(self._value(spec, event_ms))) for name, spec in self.headers.items()]
        message_key = key if self.message_key == KEY else None
        if ID in self.identity:
            places = {self.identity[ID]: compose(self.identity.get(FORMAT, DEFAULT_FORMAT), key, seq)}
        else:
            places = {self.identity[KEY]: key, self.identity[SEQ]: seq}
        for place, item in places.items():
            if place == MESSAGE_KEY:
                message_key = str(item)
            elif place.startswith(HEADER):
                headers.append((place[len(HEADER) :], str(item).encode()))
            else:
                _put(value, place.split("."), item)
        if self.message_key not in (KEY, None):
            found = value.get(self.message_key)
            message_key = None if found is None else str(found)
        return value, message_key, headers

    def _value(self, spec: Any, event_ms: int):
        if not isinstance(spec, dict):
            return spec
        rng = self.rng
        if spec.get("nulls") and rng.random() < spec["nulls"]:
            return None
        if "const" in spec:
            return spec["const"]
        if "int" in spec:
            return rng.randint(*spec["int"])
        if "decimal" in spec:
            return round(rng.uniform(*spec["decimal"]), spec.get("scale", 2))
        if "choice" in spec:
            options = spec["choice"]
            if isinstance(options, dict):
                return rng.choices(list(options), weights=list(options.values()))[0]
            return rng.choice(options)
        if "text" in spec:
            return "".join(rng.choices(_LETTERS, k=spec["text"]))
        if "event_time" in spec:
            if spec["event_time"] == "ms":
                return event_ms
            stamp = datetime.fromtimestamp(event_ms / 1000, timezone.utc)
            return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{event_ms % 1000:03d}Z"
        if "object" in spec:
            return {name: self._value(field, event_ms) for name, field in spec["object"].items()}
        low, high = spec.get("length", [0, 3])
        return [self._value(spec["array"], event_ms) for _ in range(rng.randint(low, high))]


def _put(value: dict, parts: list[str], item) -> None:
    for part in parts[:-1]:
        value = value.setdefault(part, {})
    value[parts[-1]] = item
