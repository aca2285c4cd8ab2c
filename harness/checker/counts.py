"""The run's counts and verdicts: end to end (the egresses, or the window counts of a stateful pipeline) and per
hop, with the causes counted. A run that did not finish counts as lost only what its evidence proves, and its
verdicts that rest on losses are unknown."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from contract.applications import PARTLY, UNREAD
from harness.checker.causes import CAUSE_OF_MISSING
from harness.checker.copies import ACCOUNTING, deduplicating
from harness.checker.findings import Hop, WindowCounts, Witness
from harness.checker.hops import DUPLICATED_FIRST, HOPS, TALLIES
from harness.checker.intermediate import HopData
from harness.checker.reconcile import Counts, verdict
from harness.checker.rid_sets import copies, isin
from harness.checker.step import Context, Key, Step
from harness.checker.unfinished import CAUSE_OF_LOST, EGRESS_RESULT, LOST, LOST_FIRST, LOST_KNOWN, RESULTS, UNDELIVERED
from harness.checker.windows import reconcile_windows
from harness.checker.witnesses import window_witnesses
from harness.evidence.history import OUTPUT_EXPORTED
from harness.semantics import LOST_CAUSES

COUNTS: Key[Counts | None] = Key("counts", reported=True)  # end to end
VERDICT: Key[str] = Key("verdict", lambda: "unknown", reported=True)  # end to end
HOP_FINDINGS: Key[list[Hop]] = Key("hops", list, reported=True)
CAUSES: Key[dict] = Key("causes", dict, reported=True)  # lost and duplicated, by cause (None where not counted)
LOST_BY_CAUSE: Key[dict | None] = Key("lost_by_cause")  # None: losses could not be counted
# a stateful pipeline's window counts (None: not windowed)
WINDOWS: Key[WindowCounts | None] = Key("windows", reported=True)
WINDOW_WITNESSES: Key[list[Witness]] = Key("window_witnesses", list)  # a few anomalous windows, by class
WINDOW_WITNESS_TOTALS: Key[dict] = Key("window_witness_totals", dict)  # anomalous windows' class -> windows in it


def _counts(context: Context) -> dict:
    evidence, egress_result, unfinished = context.evidence, context[EGRESS_RESULT], context.unfinished
    lost_by_cause = (
        {c: int((context[CAUSE_OF_LOST] == c).sum()) for c in LOST_CAUSES}
        if egress_result and context.known(CAUSE_OF_MISSING)
        else None
    )
    acked = int(evidence.sent.acked.sum())
    counts = egress_result.counts if egress_result else Counts.unmeasured(acked, len(evidence.sent) - acked)
    if egress_result and unfinished:
        lost, undelivered = (len(context[LOST]), len(context[UNDELIVERED])) if context[LOST_KNOWN] else (None, None)
        counts = replace(counts, lost=lost, undelivered=undelivered)
    found: dict = {WINDOWS: None, WINDOW_WITNESSES: [], WINDOW_WITNESS_TOTALS: {}}
    window_egress = next((e for e in evidence.egresses if e.windowed), None)
    if window_egress is not None:
        tally = context[TALLIES].windows  # None: no windowed count to judge
        if tally is not None:
            reconciled = reconcile_windows(evidence, tally)
            windows, counts = reconciled.summary, reconciled.counts
            lost_by_cause = {c: 0 for c in LOST_CAUSES}
            lost_by_cause["watermark"] = windows.records_dropped_by_watermark
            lost_by_cause["unexplained"] = windows.records_missing - windows.records_dropped_by_watermark
            witnessed, totals = window_witnesses(window_egress.name, reconciled.anomalous)
            found = {WINDOWS: windows, WINDOW_WITNESSES: witnessed, WINDOW_WITNESS_TOTALS: totals}
    elif egress_result is None and evidence.pipeline.holds_records:
        context.gaps.append("no egress evidence: lost, duplicated and the end-to-end verdict are unknown")
    if not counts.acked:
        context.gaps.append("no record was acknowledged by Kafka: there is nothing to judge, so the verdict is unknown")
    judged = (egress_result or found[WINDOWS]) and not unfinished and counts.acked
    return found | {
        COUNTS: counts,
        LOST_BY_CAUSE: lost_by_cause,
        VERDICT: _capped(context, verdict(counts) if judged else "unknown"),
        HOP_FINDINGS: _hops(context),
        CAUSES: {
            "lost": lost_by_cause if lost_by_cause is not None else {c: None for c in LOST_CAUSES},
            "duplicated": _duplicated_causes(context),
        },
    }


def _capped(context: Context, found: str) -> str:
    """The end-to-end verdict where not every output was read (unknown) or wholly (at most effectively)."""
    unread = observed_as(context.evidence, UNREAD)
    if unread:
        found = "unknown"
        context.gaps += [
            f"output {name}: not read: {why}: its state and deliveries are unknown" for name, why in unread.items()
        ]
    partly = partly_observed(context.evidence)
    if partly:
        found = at_most_effectively(found)
        context.gaps += [
            f"output {name}: {why}: its duplicated deliveries are a lower bound, so the verdict claims at most "
            "effectively-exactly-once"
            for name, why in partly.items()
        ]
    return found


def observed_as(evidence, observed: str) -> dict[str, str]:
    """Outputs whose export the history's output_exported says was observed so (PARTLY, UNREAD), and why."""
    found = {}
    for event in evidence.history:
        if event.get("event") == OUTPUT_EXPORTED and event.get("observed") == observed:
            found[event.get("output")] = event.get("unobserved") or (  # runs recorded before `unobserved`
                f"{event.get('updates_alone')} write(s) by UPDATE statements that no insert explains (not deliveries "
                "the audit can count)"
            )
    return found


def partly_observed(evidence) -> dict[str, str]:
    """Outputs whose writes the harness saw only in part (pipeline.json's `observed`, or the history's
    output_exported), and what it could not see."""
    found = {s.name: "its writes are only partly observable" for s in evidence.streamlets if s.observed == PARTLY}
    return found | observed_as(evidence, PARTLY)


def at_most_effectively(found: str) -> str:
    """A verdict capped where not every write was seen: exactly-once needs every delivery counted."""
    return "effectively-exactly-once" if found == "exactly-once" else found


def _hops(context: Context) -> list[Hop]:
    """Each hop's counts and verdict, where its anomalies first appear, its copies (None: not counted) and its
    copies without the source's header (None: not looked for)."""
    found = []
    accounting = context[ACCOUNTING]
    per_hop = accounting.per_hop if accounting is not None else {}
    partly = partly_observed(context.evidence)
    for index, (hop, result) in enumerate(zip(context[HOPS], context[RESULTS])):
        first_seen = {
            "lost": int((context[LOST_FIRST] == index).sum()),
            "duplicated": int((context[DUPLICATED_FIRST] == index).sum()),
        }
        hop_counts, hop_verdict = result.counts, verdict(result.counts)
        if hop.name in partly:
            hop_verdict = at_most_effectively(hop_verdict)
        if context.unfinished:  # a hop's missing records are lost only where proven (end to end), its verdict unknown
            proven_here = int(isin(result.lost, context[LOST]).sum()) if context[LOST_KNOWN] else None
            undelivered = len(result.lost) - proven_here if proven_here is not None else None
            hop_counts, hop_verdict = replace(hop_counts, lost=proven_here, undelivered=undelivered), "unknown"
        headers = context[TALLIES].copies[index].headless
        found.append(Hop(hop.name, hop.kind, hop_verdict, hop_counts, first_seen, per_hop.get(hop.name), headers))
    return found


DUPLICATED_CAUSES = (
    "replay_after_fault",
    "producer_retry",
    "unexplained",
    "aborted_read",
    "resent_read",
    "retried_read",
)


def _duplicated_causes(context: Context) -> dict:
    """Extra copies by where they came from: made by a replay after a fault, by a producer writing again what a lost
    produce response had left unanswered, made unexplained, or read from the
    source where it had them (aborted transactions' copies, the resend fault's, those its producer wrote again after
    a lost produce response)."""
    accounting = context[ACCOUNTING]
    if accounting is None:
        return dict.fromkeys(DUPLICATED_CAUSES)
    retried = accounting.made.retried.to_numpy(dtype=bool)
    attributed = int(((accounting.made.fault.to_numpy() >= 0) & ~retried).sum())
    reading_source = [h for h in context[HOPS] if h.upstream is None]
    read = sum(accounting.per_hop[h.name].inherited for h in reading_source)
    dedup = deduplicating(context.evidence.streamlets)
    again = {
        column: sum(
            _read_again(h, context.evidence.sent, accounting.made, column)
            for h in reading_source
            if h.producer not in dedup  # its copies of re-sent records are its own (made), none read
        )
        for column in ("resent_copies", "retried_copies")
    }
    return {
        "replay_after_fault": attributed,
        "producer_retry": int(retried.sum()),
        "unexplained": int(len(accounting.made) - attributed - retried.sum()),
        "aborted_read": read - sum(again.values()),
        "resent_read": again["resent_copies"],
        "retried_read": again["retried_copies"],
    }


def _read_again(hop: HopData, sent: pd.DataFrame, made: pd.DataFrame, column: str) -> int:
    """The extra copies, at a hop reading the source, of records the source wrote again (`column`: on purpose, or
    after a lost response) that were not made there: the source's."""
    resent = sent.rid.to_numpy()[sent[column].to_numpy() > 0]
    if not len(resent):
        return 0
    here = copies(hop.rows.rid.to_numpy()[isin(hop.rows.rid.to_numpy(), resent)])
    made_here = made.rid[(made.hop == hop.name).to_numpy() & isin(made.rid.to_numpy(), resent)]
    return int((here - 1).clip(lower=0).sum() - len(made_here))


def _counts_unknown(context: Context) -> dict:
    acked = int(np.sum(context.evidence.sent.acked.to_numpy()))
    return {
        COUNTS: Counts.unmeasured(acked, len(context.evidence.sent) - acked),
        CAUSES: {"lost": {c: None for c in LOST_CAUSES}, "duplicated": dict.fromkeys(DUPLICATED_CAUSES)},
    }


STEP = Step(
    "counts",
    _counts,
    writes=(COUNTS, VERDICT, HOP_FINDINGS, CAUSES, LOST_BY_CAUSE, WINDOWS, WINDOW_WITNESSES, WINDOW_WITNESS_TOTALS),
    needs=(HOPS, DUPLICATED_FIRST, TALLIES),
    uses=(EGRESS_RESULT, RESULTS, LOST, LOST_FIRST, CAUSE_OF_LOST, UNDELIVERED, LOST_KNOWN, ACCOUNTING),
    unknown=_counts_unknown,
)
