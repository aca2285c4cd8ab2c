"""Running aggregates: each output holding one (an `aggregate` of contract/aggregates.py, egress evidence
`aggregate`) judged group by group against the records its job read (harness/checker/aggregates.py), from the
values log (harness/evidence/values.py), the acknowledgement log, the job's batches (its checkpoint's offsets, in
its progress) and the output's recording. `aggregates: GUARANTEE` fails a run whose aggregates hold less; where no
output holds records, the run's verdict is theirs (harness/checker/expect.py)."""

from __future__ import annotations

from dataclasses import asdict

import numpy as np
import pandas as pd
import pyarrow as pa

from contract.aggregates import APPEND, aggregate_fields
from contract.applications import TABLE_OUTPUT
from contract.egress import AGGREGATE
from contract.query_events import QUERY_PROGRESS
from harness.checker.aggregate_windows import in_windows, open_windows, reached, start_ms, windowed
from harness.checker.aggregates import EXACT, NO_BATCH, STATUSES, Judgement, group_labels, judge
from harness.checker.expectations.kind import of_section
from harness.checker.file_readers import json_lines
from harness.checker.reconcile import Counts
from harness.checker.section import OUTPUTS_COUNTS, OUTPUTS_VERDICT, Section
from harness.checker.step import Context, Step
from harness.checker.windows import final_watermark
from harness.evidence.layout import RunLayout
from harness.evidence.values import read_values
from harness.evidence.watermark import batch_ranges
from harness.semantics import weakest

NAME = "aggregates"
HEADER = (
    "output",
    "verdict",
    "groups",
    *STATUSES,
    "records lost",
    "records counted twice",
    "dropped by the watermark",
    "values written",
    "written twice",
    "no batch gives",
)
SHOWN = 5  # groups named per output, of those not exact


def aggregated(context: Context) -> list:
    """The outputs holding an aggregate, in pipeline order."""
    return [s for s in context.evidence.streamlets if s.egress_evidence == AGGREGATE]


def _writer(context: Context, output) -> str | None:
    """The application writing the output: a table's `written_by`, a topic's producer."""
    producers = {t: s.name for s in context.evidence.streamlets for t in s.outputs}
    return output.written_by or next((producers[t] for t in output.inputs if t in producers), None)


def _records(context: Context, output, values: pd.DataFrame) -> pd.DataFrame:
    """The records the output's job read from the source topics, with their values, outcome and batch (each once
    per window it falls in, where the aggregate has windows: `late` where the job's watermark dropped it)."""
    evidence, aggregate = context.evidence, output.settings["aggregate"]
    writer = _writer(context, output)
    sent = evidence.sent
    rids = evidence.ids.ids(pa.array(values.key.to_numpy(), pa.string()), pa.array(values.seq.to_numpy()))
    merged = values.assign(rid=rids).merge(sent[["rid", "acked", "partition", "offset", "event_time_ms"]], on="rid")
    prefixes = evidence.pipeline.source_keys
    topics = evidence.pipeline.sources_of(output.name)
    merged["topic"] = _topic_of(merged.key, prefixes, evidence.pipeline.source_topic)
    merged = merged[merged.topic.isin(topics)]
    dropped = evidence.dropped.get(writer) if writer else None
    if dropped is not None and len(dropped):
        merged = merged[~np.isin(merged.rid.to_numpy(), dropped)]
    merged = merged.assign(
        group=group_labels(merged, aggregate["group"]),
        name=merged.key + ":" + merged.seq.astype(str),
        batch=_batches(merged, evidence.progress.get(writer) or []),
    ).reset_index(drop=True)
    if aggregate.get("window") is None:
        return merged
    return in_windows(merged, aggregate["window"], evidence.progress.get(writer) or [])


def _topic_of(keys: pd.Series, prefixes: dict, first: str) -> pd.Series:
    if not prefixes:
        return pd.Series(first, index=keys.index)
    found = pd.Series(None, index=keys.index, dtype=object)
    for topic, prefix in prefixes.items():
        found[keys.str.startswith(prefix)] = topic
    return found


def _batches(records: pd.DataFrame, events: list[dict]) -> np.ndarray:
    """The batch of its job that read each record (NO_BATCH where no batch's offsets hold it)."""
    batch = np.full(len(records), NO_BATCH, np.int64)
    for topic in records.topic.unique():
        ranges = batch_ranges(events, topic)
        mine = np.flatnonzero((records.topic == topic).to_numpy())
        for partition, spans in ranges.groupby("partition"):
            spans = spans.sort_values("start")
            rows = mine[records.partition.to_numpy()[mine] == partition]
            offsets = records.offset.to_numpy()[rows]
            at = np.searchsorted(spans.start.to_numpy(), offsets, side="right") - 1
            inside = (at >= 0) & (offsets < spans.end.to_numpy()[np.clip(at, 0, None)])
            batch[rows[inside]] = spans.batch_id.to_numpy()[at[inside]]
    return batch


def _in_flight(context: Context, writer: str | None) -> tuple[int, ...]:
    """The batches of the writer a kill caught in flight: at each restart of it, the first batch committed after the
    kill (replayed by the restarted driver)."""
    events = [e for e in context.evidence.progress.get(writer) or [] if e.get("event") == QUERY_PROGRESS]
    found = []
    for span in context.spans:
        if span.target == writer and span.restarts:
            after = [e for e in events if e["ts_ms"] > span.start_ms]
            if after:
                found.append(int(min(after, key=lambda e: e["ts_ms"])["progress"]["batchId"]))
    return tuple(found)


def _rows(context: Context, output, gaps: list[str]) -> tuple[pd.DataFrame, pd.DataFrame | None] | None:
    """The values the output was written, in write order, and its state at the end where it keeps one apart (a
    table's rows; None: a topic, whose reader reads every value): the group and the value columns of each (None:
    not readable, a gap says why)."""
    aggregate, layout = output.settings["aggregate"], RunLayout(context.evidence.root)
    if output.kind == TABLE_OUTPUT:
        name = output.name
        written = _lines(layout.egress_values(name), f"egress/{name}.values.jsonl", gaps, ("row",), name)
        state = _lines(layout.egress_state(name), f"egress/{name}.state.jsonl", gaps, (), name)
        if written is None or state is None:
            return None
        return _frame([w["row"] for w in written], aggregate), _frame(state, aggregate)
    (topic,) = output.inputs
    lines = _lines(layout.topic_dump(topic), f"topics/{topic}.jsonl", gaps, ("value",), output.name)
    if lines is None:
        return None
    lines = sorted(lines, key=lambda line: (line.get("timestamp_ms") or 0, line.get("partition"), line.get("offset")))
    keyed = [{**{f: line.get("key") for f in aggregate["group"]}, **_mapping(line["value"])} for line in lines]
    return _frame(keyed, aggregate), None


def _lines(path, name: str, gaps: list[str], required: tuple[str, ...], output: str) -> list[dict] | None:
    """A file's JSON lines; a missing one is a gap naming it (the output is not judged)."""
    lines = json_lines(path, name, gaps, required)
    if lines is None:
        gaps.append(f"{name}: missing (nothing known of what output {output} holds; its aggregate not judged)")
    return lines


def _mapping(value) -> dict:
    return value if isinstance(value, dict) else {}


def _frame(values: list[dict], aggregate: dict) -> pd.DataFrame:
    """Values as rows of the group's fields and the value columns, and their group (with its window's start)."""
    columns = [*aggregate["group"], *aggregate["values"]]
    table = pd.DataFrame([{c: _mapping(v).get(c) for c in columns} for v in values], columns=columns)
    groups = group_labels(table, aggregate["group"])
    if aggregate.get("window") is not None:
        starts = pd.Series([start_ms(reached(_mapping(v), aggregate["window"]["start"])) for v in values], dtype=float)
        groups = windowed(groups, starts.set_axis(table.index))
    return table.assign(group=groups)


def _judged(context: Context) -> dict[str, Judgement | None]:
    """Each aggregate output's judgement (None: its evidence could not be read; a gap says which)."""
    found: dict[str, Judgement | None] = {}
    fields = list(dict.fromkeys(f for s in aggregated(context) for f in aggregate_fields(s.settings["aggregate"])))
    try:
        values = read_values(RunLayout(context.evidence.root).values, fields)
    except (OSError, ValueError) as exc:
        context.gaps.append(f"values/: unreadable ({str(exc).splitlines()[0]}); the aggregates not judged")
        return {s.name: None for s in aggregated(context)}
    for output in aggregated(context):
        read = _rows(context, output, context.gaps)
        if read is None:
            found[output.name] = None
            continue
        written, state = read
        aggregate, writer = output.settings["aggregate"], _writer(context, output)
        records = _records(context, output, values)
        due = None
        if aggregate["mode"] == APPEND:  # a window is written once the watermark passed it: those after, not yet
            due = open_windows(records, final_watermark(context.evidence.progress.get(writer) or []))
        found[output.name] = judge(records, written, aggregate, _in_flight(context, writer), state, due)
    return found


def _row(name: str, judgement: Judgement | None) -> tuple:
    if judgement is None:
        return (name, "unknown", None, *([None] * len(STATUSES)), None, None, None, None, None, None)
    counts, written = judgement.counts, judgement.written
    return (
        name,
        judgement.verdict,
        len(judgement.groups),
        *(judgement.statuses[s] for s in STATUSES),
        counts.lost,
        counts.duplicated_in_state,
        counts.dropped,
        written.rows,
        written.copies,
        written.unexplained,
    )


def _witnesses(name: str, judgement: Judgement) -> list[str]:
    """A line per group not exact (a few), with the batch and records that explain it."""
    lines = []
    for group in [g for g in judgement.groups if g.status != EXACT][:SHOWN]:
        because = ""
        if group.batches:
            named = ", ".join(group.records[:5]) + (
                f" and {len(group.records) - 5} more" if len(group.records) > 5 else ""
            )
            done = "counted twice" if group.doubled else "not counted"
            which = ", ".join(str(b) for b in group.batches)
            because = f": batch {which} {done}, {len(group.records)} of its records ({named})"
        lines.append(
            f"{name}: group {group.group} {group.status}{because}; found {_shown(group.found)}, "
            f"expected {_shown(group.expected)}"
        )
    lines += [f"{name}: value written that no batch gives: {e}" for e in judgement.written.examples]
    return lines


def _shown(values: dict) -> str:
    return ", ".join(f"{c} {_one(v)}" for c, v in values.items()) or "nothing"


def _one(value) -> str:
    return "none" if value is None else repr(value) if isinstance(value, str) else f"{value:,.6g}"


def _section(context: Context) -> Section | None:
    outputs = aggregated(context)
    if not outputs:
        return None
    judged = _judged(context)
    rows = tuple(_row(name, j) for name, j in judged.items())
    lines = [
        "each group's values at the end against those its records give (update: the last written; increments: its "
        "rows combined), and each value written against those the job's batches could make",
        *(line for name, j in judged.items() if j is not None for line in _witnesses(name, j)),
    ]
    verdicts = {name: (j.verdict if j is not None else "unknown") for name, j in judged.items()}
    counts = [j.counts if j is not None else Counts.unmeasured() for j in judged.values()]
    data = {
        "verdicts": verdicts,
        OUTPUTS_VERDICT: weakest(list(verdicts.values())),
        OUTPUTS_COUNTS: asdict(Counts.summed(counts)),
    }
    return Section("Aggregates", tuple(lines), HEADER, rows, data=data)


AGGREGATES = of_section(
    NAME,
    "this guarantee or a stronger one, of every output holding a running aggregate",
    "aggregates",
    "no aggregate judged",
    rank=12,
)
KIND = Step(NAME, section=_section, expectations=(AGGREGATES,))
