"""Joins, declared (harness/checker/joins.py): per joining application, of the records its partner topic answers,
how many must have a result (answered within the bound) and how many have none by design, and why: never
answered, answered beyond the bound, not answered before the workload stopped. The results themselves are judged as
the job's outputs' records are (lost, duplicated, phantom); these are the drops that judgement counts as by
design. From partners.csv and pipeline.json; said only of a run with a join."""

from __future__ import annotations

import pyarrow as pa

from harness.checker.joins import partner_joins, real_topic, unjoined
from harness.checker.section import Section
from harness.checker.step import Context, Step
from harness.evidence.layout import RunLayout
from harness.evidence.partners import ANSWERED, LATE, MISSING, UNSENT, read_partners

HEADER = (
    "application",
    "partner topic",
    "within (s)",
    "records",
    "results due",
    "never answered",
    "answered beyond the bound",
    "not answered before the stop",
)


def _section(context: Context) -> Section | None:
    pipeline = context.evidence.pipeline
    joining = partner_joins(pipeline)
    if not joining:
        return None
    try:
        table = read_partners(RunLayout(context.evidence.root).partners)
    except (pa.ArrowInvalid, OSError):
        return None  # the loader's gap names it
    if table is None:
        return None
    rows, data = [], {}
    for name, joins in joining.items():
        topic = real_topic(pipeline, joins["partner"]) or joins["partner"]
        mine = table.filter(pa.compute.equal(table["partner_topic"], topic))
        dropped = unjoined(table, joins, topic)["outcome"].to_pylist()
        counted = {
            "records": mine.num_rows,
            "due": mine.num_rows - len(dropped),
            "missing": dropped.count(MISSING),
            "beyond": dropped.count(LATE) + dropped.count(ANSWERED),
            "unsent": dropped.count(UNSENT),
        }
        data[name] = counted
        rows.append((name, joins["partner"], joins["within_s"], *counted.values()))
    lines = (
        "each record a joining job's partner topic answers: a result is due where its answer came within the "
        "bound; the others have none by design (counted dropped at the job's outputs), and neither has the "
        "preflight's canary",
    )
    return Section("Joins", lines, HEADER, tuple(rows), data=data)


KIND = Step("joins", section=_section)
