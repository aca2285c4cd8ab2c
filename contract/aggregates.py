"""The words of an output holding a running aggregate (pipeline.json's `aggregate` of an output's settings), shared by
the scenario (harness/outputs/aggregate.py) and the checker (harness/checker/aggregates.py).

An aggregate is {"group": [FIELD, ...], "values": {COLUMN: {"op": OP, "field": FIELD or None}}, "mode": MODE,
"window": WINDOW or None}: per group of the records' values (and per event-time window: {"size", "slide",
"watermark", "time", "start": the output's field of the window's start}), each column the operation over a field
(count with no field: the records)."""

from contract.applications import APPEND, UPDATE  # Spark's output modes, as a windowed count's

OPERATIONS = ("count", "sum", "avg", "min", "max", "last")  # last: the value of the group's newest record
COMBINED = ("count", "sum", "min", "max")  # what a reader can combine over a group's rows (an average, a last not)

# How a reader reads the output: a group's last value written counts (Spark's update and complete modes); or each
# window's value is written once, after the watermark passed its end (Spark's append mode: a window still open at
# the end is not due); or each row is a part of its group's value (a foreachBatch writing each batch's counts and
# sums): a reader combines them.
INCREMENTS = "increments"
MODES = (UPDATE, APPEND, INCREMENTS)


def aggregate_fields(aggregate: dict) -> list[str]:
    """The record fields an aggregate is judged by: its groups', then its values'."""
    named = [*aggregate["group"], *(v["field"] for v in aggregate["values"].values() if v["field"])]
    return list(dict.fromkeys(named))
