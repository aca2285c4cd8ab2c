"""Joins, declared (harness/checker/joins.py): per joining application, of the records its partner topic answers,
how many must have a result (answered within the bound) and how many have none by design, and why: never
answered, answered beyond the bound, not answered before the workload stopped. The results themselves are judged as
the job's outputs' records are (lost, duplicated, phantom); these are the drops that judgement counts as by
design. A left outer join's rows are judged by their kind too (judge_outer): its verdict bounds the run's, and
`joins: GUARANTEE` fails a run whose outer joins hold less. From partners.csv, pipeline.json and the outputs'
recordings; said only of a run with a join."""

from __future__ import annotations

from dataclasses import asdict

import numpy as np
import pyarrow as pa

from contract.identity import IdentityReader, field_at
from harness.checker.expectations.kind import of_section
from harness.checker.file_readers import json_lines
from harness.checker.joins import OuterJudgement, answered, closed, judge_outer, partner_joins, real_topic, unjoined
from harness.checker.reconcile import Counts
from harness.checker.section import OUTPUTS_COUNTS, OUTPUTS_VERDICT, Section
from harness.checker.step import Context, Step
from harness.evidence.layout import RunLayout
from harness.evidence.partners import ANSWERED, LATE, MISSING, UNSENT, read_partners
from harness.semantics import weakest

NAME = "joins"
HEADER = (
    "application",
    "join",
    "partner topic",
    "within (s)",
    "records",
    "results due",
    "never answered",
    "answered beyond the bound",
    "not answered before the stop",
    "padded rows due",
    "answers lost",
    "phantom joins",
    "verdict",
)
SHOWN = 5  # records named per kind of wrong row
INNER = ("-",) * 4  # an inner join's cells of the outer join's columns


def _rows_at_outputs(context: Context, name: str, padded_by: str, gaps: list[str]):
    """Each row a left outer join wrote at the outputs downstream of it: its record's rid, whether it is padded, the
    answer it names and the record's name (None: an output's recording could not be read; a gap says which)."""
    pipeline, layout = context.evidence.pipeline, RunLayout(context.evidence.root)
    found = []
    for output in (s for s in pipeline.streamlets if s.identity and name in pipeline.upstream_of(s.name)):
        for topic in output.inputs:
            lines = json_lines(layout.topic_dump(topic), f"topics/{topic}.jsonl", gaps, ("value",))
            if lines is None:
                gaps.append(f"topics/{topic}.jsonl: missing; the left outer join {name}'s rows not judged")
                return None
            identity = IdentityReader(output.identity)
            found += [(*identity(line), field_at(line, padded_by)) for line in lines]
    keys = pa.array([None if k is None else str(k) for k, _, _ in found], pa.string())
    seqs = pa.array([None if s is None else str(s) for _, s, _ in found], pa.string())
    named = np.array([None if p is None else str(p) for _, _, p in found], object)
    return context.evidence.ids.ids(keys, seqs), np.array([p is None for p in named], bool), named, found


def _outer(context: Context, table: pa.Table, name: str, joins: dict, gaps: list[str]) -> tuple | None:
    """A left outer join's judgement and the rows it judged (None: not judged; a gap says why)."""
    topic = real_topic(context.evidence.pipeline, joins["partner"]) or joins["partner"]
    rows = _rows_at_outputs(context, name, joins["padded_by"], gaps)
    if rows is None:
        return None
    rids, padded, named, _ = rows
    answered_rids, answers = answered(table, joins, topic, context.evidence.ids)
    mine = table.filter(pa.compute.equal(table["partner_topic"], topic))
    due = context.evidence.ids.ids(mine["key"].combine_chunks(), mine["seq"].combine_chunks())
    due = due[context.evidence.sent_at(due, ["acked"]).acked.fillna(False).to_numpy(bool)]
    checked = (named, answers) if joins.get("partner_format") else None
    return judge_outer(answered_rids, due, rids, padded, closed(context.evidence.history), checked), rows


def _named(rids: np.ndarray, rows) -> str:
    """Up to SHOWN of the records `rids` by their names at the output (key-seq)."""
    names = {rid: f"{k}-{s}" for rid, (k, s, _) in zip(rows[0], rows[3]) if rid in set(rids[:SHOWN].tolist())}
    shown = [names.get(r, str(r)) for r in rids[:SHOWN].tolist()]
    return ", ".join(shown) + (f" and {len(rids) - SHOWN} more" if len(rids) > SHOWN else "")


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
    rows, data, lines, verdicts, counts = [], {}, [], [], []
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
        cells = INNER
        if joins.get("outer"):
            outer, judged_rows = _outer(context, table, name, joins, context.gaps) or (None, None)
            verdicts.append(outer.verdict if outer is not None else "unknown")
            counts.append(outer.counts if outer is not None else Counts.unmeasured())
            cells = _outer_cells(outer)
            lines += _outer_lines(name, joins, outer, judged_rows)
            counted |= {"outer": _outer_data(outer)}
        data[name] = counted
        kind = "left outer" if joins.get("outer") else "inner"
        rows.append((name, kind, joins["partner"], joins["within_s"], *list(counted.values())[:5], *cells))
    lines = [
        "each record a joining job's partner topic answers: a result is due where its answer came within the "
        "bound; the others have none by design (counted dropped at the job's outputs), and neither has the "
        "preflight's canary; a left outer join's others get a padded row once its watermark passed their bound",
        *lines,
    ]
    if verdicts:
        data |= {OUTPUTS_VERDICT: weakest(verdicts), OUTPUTS_COUNTS: asdict(Counts.summed(counts))}
    return Section("Joins", tuple(lines), HEADER, tuple(rows), data=data)


def _outer_cells(outer: OuterJudgement | None) -> tuple:
    if outer is None:
        return (None, None, None, "unknown")
    return (outer.padded_due, len(outer.answers_lost), len(outer.phantom_joins), outer.verdict)


def _outer_data(outer: OuterJudgement | None) -> dict | None:
    if outer is None:
        return None
    return {
        "joined_due": outer.joined_due,
        "padded_due": outer.padded_due,
        "joined": outer.joined,
        "padded": outer.padded,
        "answers_lost": len(outer.answers_lost),
        "phantom_joins": len(outer.phantom_joins),
    }


def _outer_lines(name: str, joins: dict, outer: OuterJudgement | None, rows) -> list[str]:
    if outer is None:
        return []
    found = [
        f"{name} (left outer): {outer.joined} record(s) joined, {outer.padded} padded ({joins['padded_by']} null)"
        + ("" if outer.padded_due is not None else "; the padded rows were not all due (no closing watermark)")
    ]
    if len(outer.answers_lost):
        found.append(f"  padded though answered within the bound (the answer lost): {_named(outer.answers_lost, rows)}")
    if len(outer.phantom_joins):
        found.append(f"  joined to no answer that could make the row (phantom): {_named(outer.phantom_joins, rows)}")
    return found


JOINS = of_section(
    NAME,
    "this guarantee or a stronger one, of every left outer join's rows (joined or padded as what was sent says)",
    "left outer joins",
    "no left outer join judged",
    rank=13,
)
KIND = Step(NAME, section=_section, expectations=(JOINS,))
