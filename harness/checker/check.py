"""The checker: a run directory in, a Report out. Reads files only; no broker, Spark or network.

    evidence (loaded) -> per-hop reconciliation -> first hop of each anomaly
    -> causes of loss (retention, redeploy, watermark, failed query)
    -> extra copies per hop (made here or inherited, by which batch, after which fault)
    -> window counts (stateful pipelines) -> faults and recovery -> latency
    -> witnesses -> expectations -> Report
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from harness.checker.causes import LOST_CAUSES, lost_causes
from harness.checker.copies import CopyAccounting, account
from harness.checker.evidence import Evidence, load_evidence
from harness.checker.expect import judge
from harness.checker.faults import RESTARTING, fault_spans, recovers, recovery_s
from harness.checker.findings import Copy, FaultResult, Hop, Latency, Report, Witness
from harness.checker.hops import HopData, copies_of, first_duplicated_hop, first_lost_hop, hop_data, reconcile_hops
from harness.checker.reconcile import Counts, combine, isin, verdict
from harness.checker.timeline import timeline
from harness.checker.windows import reconcile_windows
from harness.scenario.expectations import parse_expectations
from pipelines.blueprint import parse_blueprint

WITNESSES_PER_CLASS = 5


def _latency(evidence: Evidence, hops: list[HopData]) -> Latency:
    """Event time at the source -> arrival at the egress, first deliveries of on-time records."""
    egress = next((h for h in hops if h.kind == "egress"), None)
    if egress is None or egress.rows.empty:
        return Latency(0, None, None, None, None)
    first = egress.rows.drop_duplicates("rid")
    first = first[~isin(first.rid.to_numpy(), evidence.sent.rid[evidence.sent.late.to_numpy()])]
    values = (first.time_ms - first.event_time_ms).to_numpy(dtype=np.float64)
    values = values[~np.isnan(values)]
    if not len(values):
        return Latency(0, None, None, None, None)
    p50, p90, p99 = np.percentile(values, [50, 90, 99])
    return Latency(len(values), round(float(p50), 1), round(float(p90), 1), round(float(p99), 1), float(values.max()))


def _copies(hops: list[HopData], rids: np.ndarray) -> dict[int, list[Copy]]:
    found: dict[int, list[Copy]] = {int(r): [] for r in rids}
    for hop in hops:
        rows = copies_of(hop, rids)
        batch_columns = [c for c in rows.columns if c.startswith("batch.")]
        for row in rows.to_dict("records"):  # a handful of witnesses, not every record
            batches = {c[len("batch."):]: int(row[c]) for c in batch_columns if row[c] >= 0}
            if hop.kind == "egress":
                batches[hop.producer] = int(row["batch_id"])
            found[int(row["rid"])].append(Copy(hop.name, _int(row.get("partition")), _int(row.get("offset")), batches,
                                               _int(row.get("time_ms")) if hop.kind == "egress" else None))
    return found


def _int(value):
    return None if value is None or (isinstance(value, float) and np.isnan(value)) else int(value)


def _witnesses(evidence: Evidence, hops: list[HopData], classes: dict[str, tuple[np.ndarray, object]]) -> list[Witness]:
    """A few concrete records per anomaly class, with every place a copy of each was seen.

    `classes`: anomaly -> (rids, explain) where explain(rid) gives (first hop index or None, cause or None)."""
    chosen = {name: np.asarray(rids, dtype=np.int64)[:WITNESSES_PER_CLASS] for name, (rids, _) in classes.items()}
    every = np.unique(np.concatenate(list(chosen.values()) + [np.array([], np.int64)]))
    copies = _copies(hops, every)
    sent = evidence.sent[isin(evidence.sent.rid, every)].set_index("rid")  # only the witnesses' rows (one per record)
    witnesses = []
    for name, rids in chosen.items():
        explain = classes[name][1]
        for rid in rids.tolist():
            key, seq = evidence.ids.name(rid)
            source = sent.loc[rid] if rid in sent.index else None
            first_hop, cause = explain(rid)
            witnesses.append(Witness(
                name, key, seq, _int(source.partition) if source is not None else None, _int(source.offset) if source is not None else None,
                tuple(copies.get(rid, [])), hops[first_hop].name if first_hop is not None else None, cause))
    return witnesses


def _window_witnesses(evidence: Evidence, egress: str, table: pd.DataFrame) -> list[Witness]:
    witnesses = []
    for anomaly, rows in (("window_under_counted", table[table.missing > table.watermark]),
                          ("window_over_counted", table[table.over > 0]), ("window_phantom", table[table.phantom])):
        for row in rows.head(WITNESSES_PER_CLASS).itertuples(index=False):
            note = (f"window starting {pd.Timestamp(int(row.window_start_ms), unit='ms')}: count {row.count}, "
                    f"acknowledged {row.acked} (+{row.unknown} unknown), dropped behind the watermark {row.dropped}")
            witnesses.append(Witness(anomaly, str(evidence.keys[int(row.key)]) if 0 <= row.key < len(evidence.keys) else "?",
                                     None, None, None, (), egress, None, note))
    return witnesses


def _fault_results(evidence: Evidence, spans, accounting: CopyAccounting) -> list[FaultResult]:
    redelivered, at_hops = accounting.per_fault(len(spans)), accounting.per_fault_and_hop(len(spans))
    results = []
    for i, span in enumerate(spans):
        recovered = recovery_s(span, evidence.progress)
        note = ""
        if span.kind in RESTARTING and span.restarted is False:
            note = "did not restart"
        elif span.end_ms is None:
            note = "did not end before the run did"
        elif recovered is None and recovers(span):
            missing = [s for s in ([span.target] if span.kind in RESTARTING else evidence.progress) if evidence.progress.get(s) is None]
            note = (f"recovery unknown: progress of {', '.join(missing)} missing" if missing else
                    "no batch and no idle report after the restart" if span.kind in RESTARTING else "no batch after it ended")
        results.append(FaultResult(span.kind, span.target, span.start_ms, span.end_ms, span.params, recovered,
                                   int(redelivered[i]), note, recovers(span), span.restarted if span.kind in RESTARTING else None,
                                   at_hops[i]))
    return results


def unfinished_reason(evidence: Evidence, running: tuple[str, ...]) -> str:
    """Why this run is not a finished one ("" when it is): missing deliveries are not losses then."""
    if running:
        return f"run in progress: {', '.join(running)} still running"
    if not evidence.run:
        return "run.json missing: the run did not finish (still in progress, or the harness was killed)"
    status = evidence.run.get("status")
    if status != "complete":
        return f"run {status}: it stopped before the pipeline drained"
    return ""


def check_run(run_dir: Path, running: tuple[str, ...] = ()) -> Report:
    """Judge a run directory. `running`: processes of the run still alive (the caller looks; the checker reads files only)."""
    evidence = load_evidence(run_dir)
    unfinished = unfinished_reason(evidence, running)
    scenario = evidence.scenario
    spans = fault_spans(evidence.history)
    hops = hop_data(evidence)
    results = reconcile_hops(evidence, hops)
    egress_results = [r for h, r in zip(hops, results) if h.kind == "egress"]
    egress_result = combine(egress_results) if egress_results else None
    gaps = list(evidence.gaps)

    lost = egress_result.lost if egress_result else np.array([], np.int64)
    lost_first = first_lost_hop(hops, results, lost) if len(hops) else np.array([], np.int64)
    cause_of_lost, retention = lost_causes(evidence, hops, lost, lost_first, spans)
    duplicated = np.unique(np.concatenate([r.duplicated_deliveries.index.to_numpy() for r in results] + [np.array([], np.int64)]))
    dup_first = first_duplicated_hop(hops, results, duplicated)
    accounting = account(hops, evidence.sent.rid.to_numpy(), spans)

    lost_by_cause = {c: int((cause_of_lost == c).sum()) for c in LOST_CAUSES} if egress_result else None
    acked = int(evidence.sent.acked.sum())
    counts = egress_result.counts if egress_result else Counts.unmeasured(acked, len(evidence.sent) - acked)
    windows = None
    window_egress = next((e for e in evidence.egresses if e.windowed), None)
    witnesses_extra: list[Witness] = []
    if window_egress is not None:
        reconciled = reconcile_windows(evidence, window_egress)
        if reconciled is not None:
            windows, counts = reconciled.summary, reconciled.counts
            lost_by_cause = {c: 0 for c in LOST_CAUSES}
            lost_by_cause["watermark"] = windows.records_dropped_by_watermark
            lost_by_cause["unexplained"] = windows.records_missing - windows.records_dropped_by_watermark
            witnesses_extra = _window_witnesses(evidence, window_egress.name, reconciled.table)
    elif egress_result is None:
        gaps.append("no egress evidence: lost, duplicated and the end-to-end verdict are unknown")

    end_to_end = verdict(counts) if (egress_result or windows) and not unfinished else "unknown"
    hop_findings = []
    for index, (hop, result) in enumerate(zip(hops, results)):
        first_seen = {"lost": int((lost_first == index).sum()), "duplicated": int((dup_first == index).sum())}
        hop_findings.append(Hop(hop.name, hop.kind, verdict(result.counts), result.counts, first_seen,
                                accounting.per_hop[hop.name]))

    faults = _fault_results(evidence, spans, accounting)
    attributed = int((accounting.made.fault >= 0).sum())
    causes = {"lost": lost_by_cause if lost_by_cause is not None else {c: None for c in LOST_CAUSES},
              "duplicated": {"replay_after_fault": attributed, "unexplained": int(len(accounting.made) - attributed)}}
    query_failures = [{"streamlet": e.get("streamlet"), "ts_ms": e["ts_ms"], "error": str(e.get("error", ""))[:2000]}
                      for e in evidence.history if e["event"] == "query_failed"]
    if unfinished:
        gaps.insert(0, unfinished + "; counts are so far, and missing records are not judged lost")

    lost_index = pd.Series(np.arange(len(lost)), index=lost)
    dup_index = pd.Series(np.arange(len(duplicated)), index=duplicated)
    made = accounting.made.drop_duplicates("rid").set_index("rid")

    def explain_lost(rid):
        i = lost_index[rid]
        return int(lost_first[i]), str(cause_of_lost[i])

    def explain_duplicate(rid):
        if rid not in dup_index.index:
            return None, None
        return int(dup_first[dup_index[rid]]), _replay_cause(made, rid, faults) if rid in made.index else None

    classes = {"lost": (lost, explain_lost)}
    if egress_result is not None:
        classes.update({
            "duplicated_deliveries": (egress_result.duplicated_deliveries.index.to_numpy(), explain_duplicate),
            "duplicated_in_state": (egress_result.duplicated_in_state.index.to_numpy(), explain_duplicate),
            "phantom": (egress_result.phantom, lambda rid: (None, None)),
            "reordered": (egress_result.reordered.rid.to_numpy(), lambda rid: (None, None)),
        })
    witnesses = _witnesses(evidence, hops, classes) + witnesses_extra

    expectations = parse_expectations(scenario.get("expectations", {}) or {}, parse_blueprint(scenario["blueprint"]))
    return Report(
        run_dir=str(evidence.root), scenario=str(scenario.get("name", "?")), description=str(scenario.get("description", "")).strip(),
        status="running" if running else str(evidence.run.get("status", "unknown")), verdict=end_to_end, counts=counts, hops=hop_findings,
        causes=causes, retention=[w.__dict__ for w in retention], faults=faults, latency=_latency(evidence, hops),
        expectations=judge(expectations, end_to_end, counts, hop_findings, lost_by_cause, faults,
                           query_failures if evidence.has_history else None, unfinished),
        witnesses=witnesses, query_failures=query_failures, windows=windows,
        timeline=timeline(evidence, lost, duplicated), gaps=gaps, unfinished=unfinished,
    )


def _replay_cause(rows: pd.DataFrame, rid: int, faults: list[FaultResult]) -> str:
    row = rows.loc[rid]
    again = f"{row.streamlet} batch {int(row.batch)} ran again (copy made at {row.hop})"
    if row.fault < 0:
        return f"{again}; no fault before it: unexplained"
    fault = faults[int(row.fault)]
    return f"{again} after fault {int(row.fault) + 1}, {fault.kind} {fault.target}"
