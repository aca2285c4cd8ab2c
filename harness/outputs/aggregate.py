"""A running aggregate an output holds instead of records (`outputs.NAME.aggregate`): per group of the records' values
(no window), counts, sums, averages, minima and maxima the job computes, judged against what the sent records give
(harness/checker/aggregates.py). Read here from the scenario; the records' values are logged as they are sent
(harness/evidence/values.py)."""

from __future__ import annotations

import json
import re

from contract.aggregates import APPEND, COMBINED, INCREMENTS, MODES, UPDATE
from harness.field import Field
from harness.outputs.event_windows import interval, window_spans
from harness.outputs.kind import OutputSpec
from harness.workload.template import GENERATORS, record_fields

AGGREGATE = (  # an aggregate's, at outputs.NAME.aggregate
    Field(
        "group",
        (str, list),
        None,
        "the record field(s) the job groups by, each a column of the output of that name",
        required=True,
    ),
    Field(
        "values",
        dict,
        None,
        "the output's columns of values: column -> count, count(FIELD), sum(FIELD), "
        "avg(FIELD), min(FIELD), max(FIELD) or last(FIELD) (the newest record's)",
        required=True,
    ),
    Field(
        "mode",
        str,
        UPDATE,
        "how a reader reads it: update (a group's last value written counts: Spark's update "
        "and complete modes), append (each window's value written once, after the watermark passed its end) or "
        "increments (each row adds to its group, as a foreachBatch writing each batch's part does)",
        choices=MODES,
    ),
    Field("window", dict, None, "the event-time window it aggregates in, per group (outputs.NAME.aggregate.window)"),
)
WINDOW = (  # an aggregate's event-time window, at outputs.NAME.aggregate.window
    Field("size", str, None, "the window's length, like '10 seconds'", required=True),
    Field("slide", str, None, "how far it slides (by default its size: tumbling)"),
    Field("watermark", str, None, "the delay of the job's withWatermark (required in mode append)"),
    Field("time", str, None, "the record field it windows on (an event_time field of workload.record)"),
    Field(
        "start",
        str,
        None,
        "the output's field holding the window's start (window.start: inside a struct)",
        required=True,
    ),
)
OPERATION = re.compile(r"\s*(count|sum|avg|min|max|last)\s*(?:\(\s*(\*|[A-Za-z_][A-Za-z0-9_]*)?\s*\))?\s*")
NUMERIC = ("int", "decimal")


def parse_aggregate(spec: OutputSpec) -> dict | None:
    """The aggregate an output holds: its `group` fields, each value column's operation and field, its `mode`
    (None: the output holds records)."""
    declared = spec.nested("aggregate", AGGREGATE)
    if declared is None:
        return None
    if spec.values.get("identity") is not None:
        raise spec.error("identity", "an output holding an aggregate has no records' identity: leave it out")
    if spec.record is None:
        raise spec.error(
            "aggregate", "aggregates are over the fields of the workload's record template (workload.record)"
        )
    fields = spec.record.get("fields", {})
    known = record_fields(spec.record)
    groups = [declared["group"]] if isinstance(declared["group"], str) else declared["group"]
    for i, name in enumerate(groups):
        if not isinstance(name, str) or name not in known:
            raise spec.error(
                f"aggregate.group[{i}]", f"expected a field of workload.record ({', '.join(known)}), got {name!r}"
            )
    values = {}
    for column, text in declared["values"].items():
        values[column] = _operation(spec, column, text, fields, known)
        if declared["mode"] == INCREMENTS and values[column]["op"] not in COMBINED:
            raise spec.error(
                f"aggregate.values.{column}",
                f"{text!r}: in mode {declared['mode']} a reader combines a "
                f"group's rows, which it cannot for {values[column]['op']}",
            )
    if not values:
        raise spec.error("aggregate.values", "no value column: name at least one (orders: count)")
    window = _window(spec, declared["mode"])
    if declared["mode"] == APPEND and window is None:
        raise spec.error(
            "aggregate.mode", "append writes a window's value once its watermark passed it: name the window"
        )
    return {"group": groups, "values": values, "mode": declared["mode"], "window": window}


def _window(spec: OutputSpec, mode: str) -> dict | None:
    """The aggregate's event-time window: its `size` and `slide` (which divides it), the job's `watermark`, the
    event_time field it windows on, the output field holding each window's start."""
    f = spec.nested("aggregate.window", WINDOW)
    if f is None:
        return None
    size, slide, time_field = window_spans(spec, "aggregate.window", f)
    watermark = interval(spec, "aggregate.window.watermark", f["watermark"]) if f["watermark"] else None
    if mode == APPEND and watermark is None:
        raise spec.error(
            "aggregate.window.watermark",
            "mode append closes a window when the watermark passes it: give the job's withWatermark delay",
        )
    return {"size": size, "slide": slide, "watermark": watermark, "time": time_field, "start": f["start"]}


def _operation(spec: OutputSpec, column: str, text, fields: dict, known: list[str]) -> dict:
    """One value column's operation over the records' field (None: count of records)."""
    match = OPERATION.fullmatch(text) if isinstance(text, str) else None
    where = f"aggregate.values.{column}"
    if match is None:
        raise spec.error(
            where,
            f"expected count, count(FIELD), sum(FIELD), avg(FIELD), min(FIELD), max(FIELD) or last(FIELD), "
            f"got {text!r}",
        )
    op, name = match.group(1), match.group(2)
    if name in (None, "*"):
        if op != "count":
            raise spec.error(where, f"{op} of what? expected {op}(FIELD)")
        return {"op": "count", "field": None}
    if name not in known:
        raise spec.error(where, f"{name!r} is not a field of workload.record ({', '.join(known)})")
    declared = fields.get(name) if isinstance(fields.get(name), dict) else {}
    kind = next((g for g in GENERATORS if g in declared), None)
    if op not in ("count", "last") and kind not in NUMERIC:
        raise spec.error(where, f"{op}({name}): {name!r} is not a number (an int or decimal field of workload.record)")
    return {"op": op, "field": name}


def written_values(audit: list[tuple[str, int, int, dict]], group: list[str]) -> list[tuple[int, dict]]:
    """Each value a table's row took, in write order, from its audit ((op, transaction, at_ms, row) per trigger
    firing): an insert of a group not yet in the table, and each update (an upsert's insert attempt of a group
    already there is not a value: the update it made is)."""
    seen, found = set(), []
    for op, _, at_ms, row in audit:
        key = tuple(json.dumps(row.get(c), default=str) for c in group)
        if op == "update" or key not in seen:
            found.append((at_ms, row))
        seen.add(key)
    return found


def appended_window(settings: dict) -> dict | None:
    """An output's aggregate windowed in append mode as its writer's `window` (the windows the harness closes after
    the workload: harness/runner/closing.py), None for any other output."""
    aggregate = settings.get("aggregate")
    if not aggregate or aggregate["mode"] != APPEND:
        return None
    window = aggregate["window"]
    return {"size": window["size"], "slide": window["slide"], "watermark": window["watermark"], "mode": APPEND}
