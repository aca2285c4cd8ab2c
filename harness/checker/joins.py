"""Joins, declared (an application's `joins: {partner, within_s}`): the job joins each record of a topic a partner
topic answers with its answer, sent at most within_s after it (an inner join within a time bound). Which results
must appear follows from what was sent (partners.csv, harness/evidence/partners.py): a record answered within the
bound is expected joined at the job's outputs; one answered later (late_by_s beyond it), never (the declared
missing share) or not before the workload stopped has no result, by design. Those are the job's drops, as a
declared filter's are (harness/checker/load.py adds them to its `dropped`).

A left outer join (`outer: left`) keeps every record: joined where it was answered within the bound, padded (the
partner's columns null) once the watermark passed its bound. After the closing record (harness/runner/closing.py)
every padded row is due, so only the canaries and closing records are dropped; each row is then judged by its kind
(judge_outer): a padded row of a record answered within the bound lost its answer, a joined row of one not answered
within it was joined to no answer that could make it (a phantom join)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from contract.identity import DEFAULT_FORMAT, compose
from harness.checker.reconcile import Counts, verdict
from harness.checker.record_ids import RecordIds
from harness.checker.rid_sets import isin
from harness.evidence.description import PipelineDescription
from harness.evidence.history import CANARY_SENT, CLOSING_SENT, WINDOWS_CLOSED
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


def answered(table: pa.Table, joins: dict, partner_topic: str, ids: RecordIds) -> tuple[np.ndarray, np.ndarray]:
    """The records answered within the bound (rids, sorted): those a join has a result joined for; and the answer of
    each (its id, as the partner's identity composes it)."""
    mine = table.filter(pc.equal(table["partner_topic"], partner_topic))
    unanswered = unjoined(table, joins, partner_topic)
    rids = ids.ids(mine["key"].combine_chunks(), mine["seq"].combine_chunks())
    keep = ~isin(rids, ids.ids(unanswered["key"].combine_chunks(), unanswered["seq"].combine_chunks()))
    fmt = joins.get("partner_format") or DEFAULT_FORMAT
    names = np.array(
        [
            None if k is None or s is None else compose(fmt, k, s)
            for k, s in zip(mine["partner_key"].to_pylist(), mine["partner_seq"].to_pylist())
        ],
        object,
    )
    order = np.argsort(rids[keep], kind="stable")
    return rids[keep][order], names[keep][order]


def closed(history: list[dict]) -> bool:
    """Whether the closing record made every window and padded row due be emitted (harness/runner/closing.py)."""
    return any(e.get("event") == WINDOWS_CLOSED for e in history)


def _single(history: list[dict], event: str, ids: RecordIds) -> np.ndarray:
    """The rids of the single records the history says were sent (the canaries, the closing records)."""
    sent = [(str(e["key"]), str(e["seq"])) for e in history if e.get("event") == event]
    return ids.ids(pa.array([k for k, _ in sent], pa.string()), pa.array([s for _, s in sent], pa.string()))


def join_drops(
    path, pipeline: PipelineDescription, ids: RecordIds, history: list[dict], gaps: list[str]
) -> dict[str, np.ndarray]:
    """Each joining application's records without a result, by design (rids): those partners.csv says were not
    answered within the bound (of a left outer join, only while its padded rows were not all due), and the
    preflight's canaries and the closing records (answered by none); a partners.csv that cannot be read is a gap, and
    no drop is known then."""
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
    single = np.concatenate([_single(history, CANARY_SENT, ids), _single(history, CLOSING_SENT, ids)])
    found = {}
    for name, joins in joining.items():
        if joins.get("outer") and closed(history):
            found[name] = np.unique(single)
            continue
        rows = unjoined(table, joins, real_topic(pipeline, joins["partner"]) or joins["partner"])
        rids = ids.ids(rows["key"].combine_chunks(), rows["seq"].combine_chunks())
        found[name] = np.unique(np.concatenate([rids, single]))
    return found


@dataclass(frozen=True)
class OuterJudgement:
    """A left outer join's rows judged by their kind: how many records were due joined and padded (None: the padded
    rows were not all due, not judged), how many of them have a row of each kind, and the records whose rows are
    wrong."""

    joined_due: int
    padded_due: int | None
    joined: int
    padded: int
    answers_lost: np.ndarray  # rids answered within the bound, with a padded row and no joined one
    phantom_joins: np.ndarray  # rids with a joined row, not answered within the bound

    @property
    def counts(self) -> Counts:
        """As records' counts: each row due one record, an answer lost a loss, a phantom join a phantom."""
        due = self.joined_due + (self.padded_due or 0)
        return Counts(due, 0, len(self.answers_lost), 0, 0, len(self.phantom_joins), 0)

    @property
    def verdict(self) -> str:
        return verdict(self.counts)


def judge_outer(
    answered_rids: np.ndarray,
    due: np.ndarray,
    rows: np.ndarray,
    padded: np.ndarray,
    judged: bool,
    answers: tuple[np.ndarray, np.ndarray] | None = None,
) -> OuterJudgement:
    """A left outer join's rows (`rows`: a rid per row at its outputs; `padded`: whether each is padded) against the
    records due (`due`: each record a row is due for; of them, `answered_rids` joined, the others padded once
    `judged`, every padded row due). With `answers` (per row, the answer it names; per answered rid, in
    `answered_rids`' order, its answer), a joined row naming another answer than its record's is a phantom join."""
    wrong = np.zeros(len(rows), bool)
    if answers is not None:
        named, own = answers
        at = np.searchsorted(answered_rids, rows)
        known = isin(rows, answered_rids)
        wrong[known] = named[known] != own[at[known]]
    joined_rows, padded_rows = np.unique(rows[~padded & ~wrong]), np.unique(rows[padded])
    lost = padded_rows[isin(padded_rows, answered_rids) & ~isin(padded_rows, joined_rows)]
    phantom = np.union1d(joined_rows[~isin(joined_rows, answered_rids)], rows[~padded & wrong])
    expected_joined = int(isin(due, answered_rids).sum())
    return OuterJudgement(
        joined_due=expected_joined,
        padded_due=len(due) - expected_joined if judged else None,
        joined=int(isin(np.unique(rows[~padded]), due).sum()),
        padded=int(isin(padded_rows, due).sum()),
        answers_lost=lost,
        phantom_joins=phantom,
    )
