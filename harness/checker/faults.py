"""The faults of a run as the history recorded them, and how long the pipeline took to recover from each.

Each fault_begun carries its kind's classification (harness/faults/kind.py): `scope` (streamlet: its
target; cluster: every streamlet), `restarts` (its target's driver is stopped and started again) and
`recovers` (a recovery time applies). The checker reads these and keeps no list of kinds."""

from __future__ import annotations

from dataclasses import replace

from contract.query_events import QUERY_IDLE, QUERY_PROGRESS
from harness.checker.intermediate import FaultSpan
from harness.evidence.history import (
    BUDGET_REACHED,
    FAULT_BEGUN,
    FAULT_ENDED,
    FAULT_FAILED,
    FAULT_SKIPPED,
    FAULT_UNDO_FAILED,
    FAULT_UNDONE,
    PROCESS_STARTED,
    RUN_ERROR,
)

CLASSIFICATION = ("scope", "restarts", "recovers")
FIRING = ("fault", "planned_s", "late_s")  # which firing of the schedule it was: the span's number, and how late


def fault_spans(history: list[dict]) -> list[FaultSpan]:
    """fault_begun/fault_ended pairs in the order the faults began, each with its number (fault_begun's `fault`; in
    a run that did not number its faults, its place in that order)."""
    spans, open_faults = [], {}
    for i, event in enumerate(history):
        kind, target = event.get("kind"), event.get("target")
        if event["event"] == FAULT_BEGUN:
            open_faults[(kind, target)] = i
        elif event["event"] == FAULT_ENDED and (kind, target) in open_faults:
            begun = history[open_faults.pop((kind, target))]
            spans.append(_span(history, begun, event))
    spans += [_span(history, history[i], None) for i in open_faults.values()]
    ordered = sorted(spans, key=lambda s: s.start_ms)
    return [s if s.number else replace(s, number=i) for i, s in enumerate(ordered, 1)]


def _span(history: list[dict], begun: dict, ended: dict | None) -> FaultSpan:
    start = begun["ts_ms"]
    end = ended["ts_ms"] if ended else None
    restart = None
    if begun.get("restarts"):
        restart = next(
            (
                e["ts_ms"]
                for e in history
                if e["event"] == PROCESS_STARTED
                and e.get("streamlet") == begun["target"]
                and e["ts_ms"] >= start
                and (end is None or e["ts_ms"] <= end)
            ),
            None,
        )
    params = {
        k: v
        for k, v in begun.items()
        if k not in ("ts_ms", "event", "kind", "target", "pid", "planned_ms", *FIRING, *CLASSIFICATION)
    }
    return FaultSpan(
        begun["kind"],
        begun["target"],
        start,
        end,
        params,
        restart,
        ended.get("restarted") if ended else None,
        begun.get("scope", "none"),
        bool(begun.get("restarts")),
        bool(begun.get("recovers")),
        int(begun.get("fault") or 0),
    )


def _first_batch_with_input(events: list[dict], after_ms: int, replayed: int | None = None) -> int | None:
    """When the streamlet was whole again: its first batch with input after `after_ms`, or, when nothing was
    left to read, its first idle report (Spark reports idle only once it has caught up). The batch a kill
    replayed counts even without input rows: an idempotent sink skips it without reading (Delta's txn)."""

    def done(e: dict) -> bool:
        progress = e.get("progress") or {}
        return (
            e.get("event") == QUERY_IDLE
            or e.get("event") == QUERY_PROGRESS
            and (progress.get("numInputRows", 0) > 0 or replayed is not None and progress.get("batchId") == replayed)
        )

    return next((e.get("ts_ms") for e in events if e.get("ts_ms", 0) > after_ms and done(e)), None)


def recovery_s(span: FaultSpan, progress: dict[str, list[dict] | None], until_ms: int | None = None) -> float | None:
    """Fault start -> the first batch with input committed after the fault (or the first idle report, when
    nothing was left to read): by the restarted driver for a fault that restarts one; after the fault ended,
    by its target streamlet, or by the last streamlet to get going again for a fault of the whole cluster.
    None when nothing restarted, the progress evidence is missing, or that batch came after `until_ms` (when the
    restarted driver was killed again: a later driver's batch is not this restart's)."""
    if not span.recovers:
        return None
    if span.restarts:
        if span.restart_ms is None or not progress.get(span.target):
            return None
        done = _first_batch_with_input(progress[span.target], span.restart_ms, span.params.get("held_batch"))
    elif span.end_ms is not None:
        watched = disturbed(span, list(progress))
        if not watched or any(progress.get(s) is None for s in watched):
            return None
        firsts = [_first_batch_with_input(progress[s], span.end_ms) for s in watched]
        firsts = [t for t in firsts if t is not None]
        done = max(firsts) if firsts else None
    else:
        return None
    if done is None or until_ms is not None and done > until_ms:
        return None
    return round((done - span.start_ms) / 1000, 3)


def restarted_again_ms(spans: list[FaultSpan], index: int) -> int | None:
    """When the next fault restarting the same streamlet as restarting fault `index` began (None: none did)."""
    span = spans[index]
    if not span.restarts:
        return None
    later = [s.start_ms for s in spans if s.restarts and s.target == span.target and s.start_ms > span.start_ms]
    return min(later, default=None)


def first_output_s(span: FaultSpan, first_after_ms: int | None) -> float | None:
    """Fault start -> the first record any egress received once the target restarted (a restarting fault) or the
    fault ended (others), that arrival from the arrivals' tally; None when no record came after, or it did not
    restart or end."""
    return None if first_after_ms is None else round((first_after_ms - span.start_ms) / 1000, 3)


def disturbed(span: FaultSpan, streamlets: list[str]) -> list[str]:
    """The streamlets whose progress shows the recovery from `span` (and whose replays it may cause)."""
    if span.scope == "cluster":
        return list(streamlets)
    return [span.target] if span.scope == "streamlet" else []


def skipped_faults(history: list[dict]) -> list[dict]:
    """Faults that did nothing (their target gone, or failing before they began): the run is judged as usual."""
    return [
        {"kind": e.get("kind"), "target": e.get("target"), "fault": e.get("fault"), "reason": e.get("reason", "")}
        for e in history
        if e["event"] == FAULT_SKIPPED
    ]


def doubts(history: list[dict]) -> list[str]:
    """What makes a run's outcome unknown however its counts look: a fault that failed after it began (what it
    did is partly known), an undo that never happened (a broker left paused, a retention left shrunk), an error
    that cut the workload short, the evidence budget that ended it early."""
    found = [
        f"fault {e.get('fault')} ({e.get('kind')} {e.get('target')}) failed after it began: {e.get('reason')}"
        for e in history
        if e["event"] == FAULT_FAILED and e.get("stage") != "undo"
    ]
    undone = {e.get("undo") for e in history if e["event"] == FAULT_UNDONE}
    failed_undos = {
        e.get("undo"): e for e in history if e["event"] == FAULT_UNDO_FAILED and e.get("undo") not in undone
    }
    found += [
        f"{e.get('kind')} {e.get('target')}: could not {e.get('what')} ({e.get('reason')})"
        for e in failed_undos.values()
    ]
    found += [f"the workload stopped early: {e.get('error')}" for e in history if e["event"] == RUN_ERROR]
    found += [
        f"the workload ended early: the run's evidence reached {e.get('evidence_bytes', 0) / 1e6:,.1f} MB of its "
        f"budget of {e.get('budget_bytes', 0) / 1e6:,.1f} MB; the faults after it were not played and the periods "
        "after it were not run"
        for e in history
        if e["event"] == BUDGET_REACHED
    ]
    return found
