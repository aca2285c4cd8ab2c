"""Records correlated across source topics: what became of each answer a partner topic owes (partners.csv:
harness/evidence/partners.py), per partner topic: the records it answers, answered as planned or late, left without
one by design (the declared missing share) or because the workload stopped first, and of the answers sent how many
the brokers acknowledged. From partners.csv and the acknowledgement log; said only of a run with partner topics."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from harness.checker.section import Section
from harness.checker.step import Context, Step
from harness.evidence.layout import RunLayout
from harness.evidence.partners import ANSWERED, LATE, MISSING, OUTCOMES, UNSENT, read_partners

HEADER = ("partner topic", "answers", "records", "answered", "late", "missing by design", "unsent", "acknowledged")


def _acknowledged(context: Context, keys: pa.Array, seqs: pa.Array) -> int:
    """How many of these records the acknowledgement log has acked."""
    evidence = context.evidence
    rids = evidence.ids.ids(keys, seqs)
    acked = evidence.sent.rid.to_numpy()[evidence.sent.acked.to_numpy()]
    return int(np.isin(rids, acked).sum())


def _section(context: Context) -> Section | None:
    layout = RunLayout(context.evidence.root)
    try:
        table = read_partners(layout.partners)
    except (pa.ArrowInvalid, OSError) as exc:
        context.gaps.append(f"partners.csv: unreadable ({str(exc).splitlines()[0]}); the partner topics not counted")
        return None
    if table is None:
        return None
    prefixes = {prefix: topic for topic, prefix in context.evidence.pipeline.source_keys.items()}
    rows, data = [], {}
    for partner in sorted(set(table["partner_topic"].to_pylist()) - {None}):
        mine = table.filter(pa.compute.equal(table["partner_topic"], partner))
        outcomes = mine["outcome"].to_pylist()
        counted = {outcome: outcomes.count(outcome) for outcome in OUTCOMES}
        sent = mine.filter(pa.compute.is_in(mine["outcome"], pa.array([ANSWERED, LATE])))
        acked = _acknowledged(context, sent["partner_key"], sent["partner_seq"])
        first_key = mine["key"][0].as_py() or ""
        answers = next((t for p, t in prefixes.items() if first_key.startswith(p)), None)
        data[partner] = {"answers": answers, "records": len(outcomes), **counted, "acknowledged": acked}
        row = (partner, answers, len(outcomes), counted[ANSWERED], counted[LATE], counted[MISSING], counted[UNSENT])
        rows.append((*row, acked))
    lines = (
        "each record of a topic that partner topics answer, and what became of its answer in each of them",
        "; ".join(f"{outcome}: {meaning}" for outcome, meaning in OUTCOMES.items()),
    )
    return Section("Partners", lines, HEADER, tuple(rows), data=data)


KIND = Step("partners", section=_section)
