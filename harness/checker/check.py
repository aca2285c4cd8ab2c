"""The checker: a run directory in, a Report out. Reads files only; no broker, Spark or network.

evidence (loaded) -> per-hop reconciliation -> first hop of each anomaly
-> causes of loss (retention, redeploy, watermark, failed query)
-> extra copies per hop (made here or inherited, by which batch, after which fault)
-> window counts (stateful pipelines) -> faults and recovery -> latency
-> witnesses -> expectations -> Report
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from harness.checker.causes import lost_causes
from harness.checker.copies import CopyAccounting, account
from harness.checker.evidence import Evidence, load_evidence
from harness.checker.expect import judge
from harness.checker.faults import disturbed, doubts, fault_spans, recovery_s, skipped_faults
from harness.checker.findings import FaultResult, Hop, Report, Witness
from harness.checker.hops import HopData, first_duplicated_hop, first_lost_hop, hop_data, reconcile_hops
from harness.checker.latency import latency
from harness.checker.reconcile import Counts, combine, isin, verdict
from harness.checker.resources import resource_use
from harness.checker.timeline import run_start_ms, timeline
from harness.checker.unfinished import proven_lost, unfinished_reason
from harness.checker.windows import reconcile_windows
from harness.checker.witnesses import AnomalyClass, record_sets, replay_cause, window_witnesses, witnesses
from harness.semantics import LOST_CAUSES


def _fault_results(evidence: Evidence, spans, accounting: CopyAccounting) -> list[FaultResult]:
    redelivered, at_hops = accounting.per_fault(len(spans)), accounting.per_fault_and_hop(len(spans))
    results = []
    for i, span in enumerate(spans):
        recovered = recovery_s(span, evidence.progress)
        note = ""
        if span.restarts and span.restarted is False:
            note = "did not restart"
        elif span.end_ms is None:
            note = "did not end before the run did"
        elif recovered is None and span.recovers:
            watched = [span.target] if span.restarts else disturbed(span, list(evidence.progress))
            missing = [s for s in watched if evidence.progress.get(s) is None]
            note = (
                f"recovery unknown: progress of {', '.join(missing)} missing"
                if missing
                else "no batch and no idle report after the restart"
                if span.restarts
                else "no batch after it ended"
            )
        results.append(
            FaultResult(
                span.kind,
                span.target,
                span.start_ms,
                span.end_ms,
                span.params,
                recovered,
                int(redelivered[i]),
                note,
                span.recovers,
                span.restarted if span.restarts else None,
                at_hops[i],
            )
        )
    return results


def check_run(run_dir: Path, running: tuple[str, ...] = ()) -> Report:
    """Judge a run directory. `running`: processes of the run still alive (the caller looks; the checker reads
    files only)."""
    evidence = load_evidence(run_dir)
    unfinished = unfinished_reason(evidence, running)
    pipeline = evidence.pipeline
    spans = fault_spans(evidence.history)
    hops = hop_data(evidence)
    results = reconcile_hops(evidence, hops)
    egress_results = [r for h, r in zip(hops, results) if h.kind == "egress"]
    egress_result = combine(egress_results) if egress_results else None
    gaps = list(evidence.gaps)

    lost = egress_result.lost if egress_result else np.array([], np.int64)
    lost_first = first_lost_hop(hops, results, lost) if len(hops) else np.array([], np.int64)
    cause_of_lost, retention = lost_causes(evidence, hops, lost, lost_first, spans, gaps)
    undelivered = np.array([], np.int64)
    if unfinished:  # missing is lost only where proven; the rest may be in flight
        proven = proven_lost(evidence, hops, lost, lost_first, cause_of_lost)
        undelivered, lost, lost_first, cause_of_lost = (
            lost[~proven],
            lost[proven],
            lost_first[proven],
            cause_of_lost[proven],
        )
    duplicated = np.unique(
        np.concatenate([r.duplicated_deliveries.index.to_numpy() for r in results] + [np.array([], np.int64)])
    )
    dup_first = first_duplicated_hop(hops, results, duplicated)
    accounting = account(hops, evidence.sent, spans)

    lost_by_cause = {c: int((cause_of_lost == c).sum()) for c in LOST_CAUSES} if egress_result else None
    acked = int(evidence.sent.acked.sum())
    counts = egress_result.counts if egress_result else Counts.unmeasured(acked, len(evidence.sent) - acked)
    if egress_result and unfinished:
        counts = replace(counts, lost=len(lost), undelivered=len(undelivered))
    windows = None
    window_egress = next((e for e in evidence.egresses if e.windowed), None)
    witnesses_extra: list[Witness] = []
    totals: dict[str, int] = {}
    if window_egress is not None:
        reconciled = reconcile_windows(evidence, window_egress)
        if reconciled is not None:
            windows, counts = reconciled.summary, reconciled.counts
            lost_by_cause = {c: 0 for c in LOST_CAUSES}
            lost_by_cause["watermark"] = windows.records_dropped_by_watermark
            lost_by_cause["unexplained"] = windows.records_missing - windows.records_dropped_by_watermark
            witnesses_extra, totals = window_witnesses(evidence, window_egress.name, reconciled.table)
    elif egress_result is None:
        gaps.append("no egress evidence: lost, duplicated and the end-to-end verdict are unknown")

    if not counts.acked:
        gaps.append("no record was acknowledged by Kafka: there is nothing to judge, so the verdict is unknown")
    end_to_end = verdict(counts) if (egress_result or windows) and not unfinished and counts.acked else "unknown"
    hop_findings = []
    for index, (hop, result) in enumerate(zip(hops, results)):
        first_seen = {"lost": int((lost_first == index).sum()), "duplicated": int((dup_first == index).sum())}
        hop_counts, hop_verdict = result.counts, verdict(result.counts)
        if unfinished:  # a hop's missing records are lost only where proven (end to end), its verdict unknown
            proven_here = int(isin(result.lost, lost).sum())
            hop_counts, hop_verdict = (
                replace(hop_counts, lost=proven_here, undelivered=len(result.lost) - proven_here),
                "unknown",
            )
        hop_findings.append(
            Hop(
                hop.name,
                hop.kind,
                hop_verdict,
                hop_counts,
                first_seen,
                accounting.per_hop[hop.name],
                _headers_lost(hop, evidence.sent),
            )
        )

    faults = _fault_results(evidence, spans, accounting)
    attributed = int((accounting.made.fault >= 0).sum())
    causes = {
        "lost": lost_by_cause if lost_by_cause is not None else {c: None for c in LOST_CAUSES},
        "duplicated": {
            "replay_after_fault": attributed,
            "unexplained": int(len(accounting.made) - attributed),
            "aborted_read": sum(accounting.per_hop[h.name].inherited for h in hops if h.upstream is None),
        },
    }
    query_failures = [
        {"streamlet": e.get("streamlet"), "ts_ms": e["ts_ms"], "error": str(e.get("error", ""))[:2000]}
        for e in evidence.history
        if e["event"] == "query_failed"
    ]
    if unfinished:
        gaps.insert(
            0,
            unfinished
            + "; counts are so far, and a missing record is lost only where the evidence proves it (the rest is "
            "undelivered)",
        )

    lost_index = pd.Series(np.arange(len(lost)), index=lost)
    dup_index = pd.Series(np.arange(len(duplicated)), index=duplicated)
    made = accounting.made.drop_duplicates("rid").set_index("rid")

    def explain_lost(rid):
        i = lost_index[rid]
        return int(lost_first[i]), str(cause_of_lost[i])

    def explain_duplicate(rid):
        if rid not in dup_index.index:
            return None, None
        return int(dup_first[dup_index[rid]]), replay_cause(made, rid, faults) if rid in made.index else None

    classes = [AnomalyClass("lost", lost, explain_lost)]
    if egress_result is not None:
        classes += [
            AnomalyClass(
                "duplicated_deliveries", egress_result.duplicated_deliveries.index.to_numpy(), explain_duplicate
            ),
            AnomalyClass("duplicated_in_state", egress_result.duplicated_in_state.index.to_numpy(), explain_duplicate),
            AnomalyClass("phantom", egress_result.phantom, lambda rid: (None, None)),
            AnomalyClass("reordered", egress_result.reordered.rid.to_numpy(), lambda rid: (None, None)),
        ]
    found = witnesses(evidence, hops, classes, accounting) + witnesses_extra
    totals |= {c.name: len(c.rids) for c in classes}

    expectations = pipeline.expectations
    resources = resource_use(evidence.history, run_start_ms(evidence))
    return Report(
        run_dir=str(evidence.root),
        scenario=pipeline.name,
        description=pipeline.description.strip(),
        status="running" if running else str(evidence.run.get("status", "unknown")),
        verdict=end_to_end,
        counts=counts,
        hops=hop_findings,
        causes=causes,
        retention=[w.__dict__ for w in retention],
        faults=faults,
        latency=latency(evidence, hops, faults),
        expectations=judge(
            expectations,
            end_to_end,
            counts,
            hop_findings,
            lost_by_cause,
            faults,
            query_failures if evidence.has_history else None,
            unfinished,
            resources,
        ),
        witnesses=found,
        query_failures=query_failures,
        windows=windows,
        timeline=timeline(evidence, lost, duplicated, accounting.made.time_ms.to_numpy()),
        gaps=gaps,
        unfinished=unfinished,
        run_info=_run_info(evidence, spans),
        witness_totals=totals,
        resources=resources,
        doubts=doubts(evidence.history),
        skipped_faults=skipped_faults(evidence.history),
        records=record_sets(evidence, hops, lost, lost_first, cause_of_lost, egress_result),
    )


def _headers_lost(hop: HopData, sent: pd.DataFrame) -> int | None:
    """Copies of sent records at a topic that lack the header every source record carried (pipeline.json
    source_header); None where it was not looked for (no such header, or an egress: its store keeps none)."""
    if "has_header" not in hop.rows.columns:
        return None
    rows = hop.rows[isin(hop.rows.rid.to_numpy(), sent.rid.to_numpy())]
    return int((~rows.has_header.to_numpy(dtype=bool)).sum())


def _run_info(evidence: Evidence, spans) -> dict:
    resolved = evidence.resolved
    schedule = resolved.get("schedule")
    return {
        "seed": resolved.get("seed"),
        "duration_s": resolved.get("duration_s"),
        "after_faults_s": resolved.get("after_faults_s"),
        "faults_planned": (len(schedule) if isinstance(schedule, list) else None)
        if resolved.get("faults_played", True)
        else 0,
        "faults_played": len(spans),
        "versions": evidence.versions,
        **({"storm": resolved["storm"]} if isinstance(resolved.get("storm"), dict) else {}),
    }
