"""Joins, declared (an application's `joins: {partner, within_s}`): the job joins each record of a topic a partner
topic answers with its answer, sent at most within_s after it (an inner join within a time bound). Which results
must appear follows from what was sent (partners.csv, harness/evidence/partners.py): a record answered within the
bound is expected joined at the job's outputs; one answered later (late_by_s beyond it), never (the declared
missing share) or not before the workload stopped has no result, by design. Those are the job's drops, as a
declared filter's are (harness/checker/load.py adds them to its `dropped`)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from harness.checker.record_ids import RecordIds
from harness.evidence.description import PipelineDescription
from harness.evidence.history import CANARY_SENT
from harness.evidence.partners import ANSWERED, LATE, MISSING, UNSENT, read_partners

UNJOINED = {MISSING: "never answered", UNSENT: "not answered before the workload stopped"}


def real_topic(pipeline: PipelineDescription, name: str) -> str | None:
    """A source topic's real name (on a cluster one runs, in the run's namespace)."""
    return next((t for t in pipeline.source_topics if t == name or t.endswith(f".{name}")), None)


def partner_joins(pipeline: PipelineDescription) -> dict[str, dict]:
    """Each application joining a partner topic's answers: its `joins` (a join with a static table is a declared
    filter, its drops the generator's)."""
    return {
        s.name: s.settings["joins"] for s in pipeline.streamlets if "partner" in ((s.settings or {}).get("joins") or {})
    }


def unjoined(table: pa.Table, joins: dict, partner_topic: str) -> pa.Table:
    """The rows of partners.csv whose record has no result of the join: its answer never sent, or sent beyond the
    bound (an answer is due after_s after its record, a late one late_by_s later still)."""
    mine = table.filter(pc.equal(table["partner_topic"], partner_topic))
    beyond = [LATE] if joins["after_s"] + joins["late_by_s"] > joins["within_s"] else []
    beyond += [ANSWERED] if joins["after_s"] > joins["within_s"] else []
    return mine.filter(pc.is_in(mine["outcome"], pa.array([*UNJOINED, *beyond])))


def join_drops(
    path, pipeline: PipelineDescription, ids: RecordIds, history: list[dict], gaps: list[str]
) -> dict[str, np.ndarray]:
    """Each joining application's records without a result, by design (rids): those partners.csv says were not
    answered within the bound, and the preflight's canaries (answered by none); a partners.csv that cannot be read is
    a gap, and no drop is known then."""
    joining = partner_joins(pipeline)
    if not joining:
        return {}
    try:
        table = read_partners(path)
    except (pa.ArrowInvalid, OSError) as exc:
        gaps.append(f"partners.csv: unreadable ({str(exc).splitlines()[0]}); the joins' results not known")
        return {}
    if table is None:
        gaps.append("partners.csv: missing; the joins' results not known")
        return {}
    canaries = [(str(e["key"]), str(e["seq"])) for e in history if e.get("event") == CANARY_SENT]
    canary_rids = ids.ids(
        pa.array([k for k, _ in canaries], pa.string()), pa.array([s for _, s in canaries], pa.string())
    )
    found = {}
    for name, joins in joining.items():
        rows = unjoined(table, joins, real_topic(pipeline, joins["partner"]) or joins["partner"])
        rids = ids.ids(rows["key"].combine_chunks(), rows["seq"].combine_chunks())
        found[name] = np.unique(np.concatenate([rids, canary_rids]))
    return found
