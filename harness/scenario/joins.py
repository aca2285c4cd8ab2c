"""An application's join, declared (`applications.NAME.joins`): with a partner topic's answers within a time bound,
inner or left outer (checked against the workload in parse.py, judged by harness/checker/joins.py), or with a
static table, a file beside the job: an inner join keeps a record whose `field` matches a value of the table's
column, so the join is the declared filter `field IN (the column's values)`, its other records dropped by design as
a `keeps` drops."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

from harness.scenario.blueprint import BlueprintError
from harness.scenario.declared import JOINS
from harness.workload.predicate import Predicate
from harness.workload.template import record_fields

NUMBER = re.compile(r"-?\d+(\.\d+)?")


def parse_joins(raw: dict | None, record: dict | None, cwd: Path, path: str) -> dict | None:
    """The join's settings: {partner, within_s} (and {outer, watermark_s, padded_by} of a left outer join) or
    {static, field, column, keeps: the filter it is, rows}."""
    if raw is None:
        return None
    declared = JOINS.read(raw, path)
    if (declared["partner"] is None) == (declared["static"] is None):
        raise BlueprintError(
            path, "name the partner topic it joins (partner, within_s) or its static table (static, field)"
        )
    if declared["partner"] is not None:
        return _partner(declared, path)
    for name in ("outer", "watermark_s", "padded_by"):
        if declared[name] is not None:
            raise BlueprintError(f"{path}.{name}", "only a join with a partner topic is an outer one")
    return _static(declared, record, cwd, path)


def _partner(declared: dict, path: str) -> dict:
    """A join with a partner topic's answers: inner, or left outer (its watermark makes the padded rows due)."""
    if declared["within_s"] is None:
        raise BlueprintError(f"{path}.within_s", "a join with a partner topic needs its time bound")
    joins = {"partner": declared["partner"], "within_s": declared["within_s"]}
    if declared["outer"] is None:
        for name in ("watermark_s", "padded_by"):
            if declared[name] is not None:
                raise BlueprintError(f"{path}.{name}", "only an outer join (outer: left) pads rows")
        return joins
    if declared["watermark_s"] is None:
        raise BlueprintError(
            f"{path}.watermark_s", "a left outer join needs the job's watermark delay (its padded rows wait for it)"
        )
    return joins | {k: declared[k] for k in ("outer", "watermark_s", "padded_by")}


def _static(declared: dict, record: dict | None, cwd: Path, path: str) -> dict:
    name, column = declared["field"], declared["column"] or declared["field"]
    if name is None:
        raise BlueprintError(f"{path}.field", "a join with a static table needs the record field it joins on")
    fields = record_fields(record) if record else []
    if name not in fields:
        raise BlueprintError(
            f"{path}.field", f"expected a field of workload.record ({', '.join(fields) or 'none'}), got {name!r}"
        )
    file = cwd / declared["static"]
    values = _column(file, column, f"{path}.static")
    sql = f'"{name}" IN ({", ".join(_literal(v) for v in values)})' if values else "0 = 1"
    Predicate(sql, fields)
    return {"static": str(file), "field": name, "column": column, "keeps": sql, "rows": len(values)}


def _column(file: Path, column: str, path: str) -> list:
    """The distinct values of a column of a CSV file (its header names the columns) or a JSON-lines file."""
    try:
        text = file.read_text()
    except OSError as exc:
        raise BlueprintError(path, f"cannot read {file}: {exc.strerror or exc}") from None
    if file.suffix in (".jsonl", ".json"):
        try:
            rows = [json.loads(line) for line in text.splitlines() if line.strip()]
        except ValueError as exc:
            raise BlueprintError(path, f"{file.name}: not JSON lines ({exc})") from None
    else:
        rows = list(csv.DictReader(text.splitlines()))
    if not rows or not all(isinstance(r, dict) and column in r for r in rows):
        raise BlueprintError(path, f"{file.name}: no column {column!r} in every row")
    return list(dict.fromkeys(r[column] for r in rows if r[column] not in (None, "")))


def _literal(value) -> str:
    """A value as an SQL literal: a number (or text holding one) as it is, other text quoted."""
    text = str(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool) or NUMBER.fullmatch(text):
        return text
    return "'" + text.replace("'", "''") + "'"
