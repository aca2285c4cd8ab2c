"""An engine's counts turned into the checker's Reconciliation per hop (harness/checker/reconcile.py) and its
Tallies (of the arrivals, harness/checker/arrivals.py, the sendings, periods.py, and each hop's copies, copies.py):
the same records, in the same order, and the same tallies the numpy path finds, so every step after the
reconciliation and the report are the same whichever engine counted."""

from __future__ import annotations

from typing import Callable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from contract.egress import WINDOW_AUDIT, WINDOW_STATE
from harness.checker.arrivals import boundaries, downtimes
from harness.checker.causes import placed_by_neighbours, shrinks
from harness.checker.eras import recreations
from harness.checker.hops import dropped_upstream
from harness.checker.intermediate import Arrivals, FaultSpan, HopData, Sendings, SentCopies, Tallies, WindowTally
from harness.checker.load import Evidence
from harness.checker.periods import planned_span_ms
from harness.checker.reconcile import Reconciliation, reconciliation
from harness.checker.record_ids import RecordIds, split_rid
from harness.checker.summary.identities import named_identity
from harness.checker.summary.sources import Source, ack_source, hop_sources
from harness.checker.summary.sql import (
    AT_RISK,
    ERA_ROWS,
    FIRST_AFTER,
    LATENCIES,
    LOGGED,
    NEIGHBOURS,
    NOTABLE,
    SENDINGS,
    SENT,
    TOTALS,
    WINDOW_CELLS,
    WINDOW_COUNTS,
    WINDOW_DELIVERIES,
    WINDOW_TOTALS,
    HopTables,
    Plan,
    WindowPlan,
    delivered_table,
    dropped_table,
    late_result,
    stored_table,
)
from harness.checker.window_cells import CellTotals
from harness.checker.windows import counter_of, final_watermark, window_spans
from harness.errors import HarnessError
from harness.evidence.layout import RunLayout
from harness.evidence.watermark import batch_ranges

# An engine: the tables (name -> where its rows are) and the plan in, each result statement's rows out.
Run = Callable[[dict[str, Source], Plan], dict[str, pa.Table]]
LINE_PLACE = (1 << 60) - 1  # the kept line's place, under its rank's marks (identities.py)


def identity_rows(rids: np.ndarray, ids: RecordIds) -> pa.Table:
    """The identities (key, seq, seq_text) of rids the checker holds, as the engines read them."""
    rids = np.asarray(rids, np.int64)
    ordinary = rids >= 0
    codes, seqs = split_rid(np.where(ordinary, rids, 0))
    keys = ids.values.take(pa.array(codes)).to_pylist() if len(rids) else []
    seq, text = seqs.tolist(), [None] * len(rids)
    for i in np.flatnonzero(~ordinary):
        name = ids.name(int(rids[i]))
        keys[i], (seq[i], text[i]) = name[0], named_identity(*name)
    return pa.table(
        {"key": pa.array(keys, pa.string()), "seq": pa.array(seq, pa.int64()), "seq_text": pa.array(text, pa.string())}
    )


def rids_of(table: pa.Table, ids: RecordIds) -> np.ndarray:
    """The rid of each identity an engine gives back (each was seen when the evidence was loaded)."""
    key, seq, text = (table[c].combine_chunks() for c in ("key", "seq", "seq_text"))
    plain = pc.and_(pc.is_null(text), pc.is_valid(seq))
    out = np.zeros(len(table), np.int64)
    mask = plain.to_numpy(zero_copy_only=False)
    if mask.any():
        out[mask] = ids.ids(key.filter(plain).cast(pa.string()), seq.filter(plain).cast(pa.int64()))
    keys, texts = key.to_pylist(), text.to_pylist()
    for i in np.flatnonzero(~mask):
        out[i] = ids.alien(keys[i], texts[i])
    return out


def _order(rids: np.ndarray, at: np.ndarray) -> np.ndarray:
    return rids[np.argsort(at, kind="stable")]


def _copies(rids: np.ndarray, counts: np.ndarray, at: np.ndarray) -> pd.Series:
    order = np.argsort(at, kind="stable")
    return pd.Series(counts[order].astype(np.int64), index=pd.Index(rids[order]), name="count")


def _late(table: pa.Table, ids: RecordIds) -> pd.DataFrame:
    """The first deliveries below a seq delivered before them, in delivery order."""
    table = table.take(pa.array(np.argsort(table["place"].to_numpy(), kind="stable"), pa.int64()))
    rid = ids.ids(table["key"].combine_chunks().cast(pa.string()), table["seq"].combine_chunks().cast(pa.int64()))
    return pd.DataFrame({"rid": rid, "after_seq": table["after_seq"].to_numpy().astype(np.int64)})


def _hop(n: dict[str, np.ndarray], rids: np.ndarray, i: int, tables: HopTables, late: pd.DataFrame, totals: dict):
    """Hop i's reconciliation from the notable records' columns (n) and their rids."""
    has_state = tables.stored
    sent = n["lines"] > 0
    acked = sent & (n["acked"] == 1)
    delivered_copies, delivered_at = n[f"d{i}"], n[f"d{i}_at"]
    stored_copies, stored_at = (n[f"s{i}"], n[f"s{i}_at"]) if has_state else (delivered_copies, delivered_at)
    by_design = acked & (n[f"x{i}"] == 1)
    kept = n["kept"] & LINE_PLACE
    lost = acked & ~by_design & (stored_copies == 0)
    more_d, more_s = sent & (delivered_copies > 1), sent & (stored_copies > 1)
    arrived = ~sent & ((delivered_copies > 0) | (stored_copies > 0))
    lost_rids, dropped_rids = _order(rids[lost], kept[lost]), _order(rids[by_design], kept[by_design])
    dup_d = _copies(rids[more_d], delivered_copies[more_d], delivered_at[more_d])
    dup_s = _copies(rids[more_s], stored_copies[more_s], stored_at[more_s])
    # as reconcile() gives them: an egress's in rid order (a union with its state's, an output topic's too), a
    # topic's in the order first delivered
    phantom = np.unique(rids[arrived]) if tables.egress else _order(rids[arrived], delivered_at[arrived])
    return reconciliation(totals["acked"], totals["unknown"], lost_rids, dup_d, dup_s, phantom, late, dropped_rids)


def _arrivals(results: dict[str, pa.Table], after: list[int | None]) -> Arrivals:
    """The arrivals' tally from the engine's latencies and first arrivals after each of `after`."""
    latencies = results.get(LATENCIES)
    if latencies is None or not latencies.num_rows:
        histogram, waiting = (np.array([], np.int64), np.array([], np.int64)), 0
    else:
        latencies = latencies.sort_by("latency_ms")
        histogram = tuple(latencies[c].to_numpy().astype(np.int64) for c in ("latency_ms", "records"))
        waiting = int(pc.sum(latencies["waiting_ms"]).as_py() or 0)
    found = iter(results[FIRST_AFTER].to_pylist()[0].values()) if FIRST_AFTER in results else iter(())
    # in the order of `after`, its Nones kept; none found without an egress of records (a windowed count only)
    first_after = [None if ms is None else next(found, None) for ms in after]
    return Arrivals(*histogram, waiting, [None if t is None else int(t) for t in first_after])


def _sendings(table: pa.Table) -> Sendings | None:
    """The sendings' tally from the engine's counts per slot (none: no record's time is known)."""
    if not table.num_rows:
        return None
    rows = table.to_pydict()
    start_ms, end_ms, length_ms = (int(rows[c][0]) for c in ("start_ms", "end_ms", "length_ms"))
    slots = (end_ms - start_ms) // length_ms + 2
    acked, unknown = np.zeros(slots, np.int64), np.zeros(slots, np.int64)
    acked[rows["slot"]], unknown[rows["slot"]] = rows["acked"], rows["unknown"]
    return Sendings(start_ms, end_ms, length_ms, acked, unknown)


def _at_risk(evidence: Evidence, hops: list[HopData]) -> dict[str, list[tuple[int, int, int]]]:
    """Per table, the offset ranges retention shrinks deleted (causes.shrinks): in a topic's deliveries where the
    run recorded it, else in the acknowledgement log for the source topic, as the retention cause reads them."""
    tables = {h.name: delivered_table(i) for i, h in enumerate(hops) if h.kind == "topic"}
    ranges: dict[str, list[tuple[int, int, int]]] = {}
    for _, topic, deleted in shrinks(evidence.history):
        table = tables.get(topic, SENT if topic == evidence.source_topic else None)
        if table is not None:
            ranges.setdefault(table, []).extend((p, low, high) for p, (low, high) in deleted.items() if low < high)
    return {table: within for table, within in ranges.items() if within}


def _placed(evidence: Evidence, hops: list[HopData]) -> tuple[tuple[int, tuple[int, ...]], ...]:
    """Per topic hop, the partitions where a retention shrink deleted offsets its recording missed."""
    missed = placed_by_neighbours(evidence.history)
    return tuple((i, missed[h.name]) for i, h in enumerate(hops) if h.kind == "topic" and h.name in missed)


def _window_plan(evidence: Evidence, hops: list[HopData], views: dict[str, Source]) -> WindowPlan | None:
    """The windowed count to judge (none: the pipeline has no window egress), its egress's tables added to `views`."""
    counter = counter_of(evidence)
    egress = next((e for e in evidence.egresses if e.windowed), None)
    if counter is None or egress is None:
        return None
    db = str(RunLayout(evidence.root).egress_db(egress.name))
    views[WINDOW_DELIVERIES] = Source(db=db, sql=f"SELECT key, window_start_ms FROM {WINDOW_AUDIT} ORDER BY rowid")
    views[WINDOW_COUNTS] = Source(db=db, sql=f"SELECT key, window_start_ms, count FROM {WINDOW_STATE}")
    topic = counter.inputs[0] if counter.inputs else None
    tables = {h.name: delivered_table(i) for i, h in enumerate(hops) if h.kind == "topic"}
    reads = tables.get(topic, SENT if topic is not None and topic == evidence.pipeline.source_topic else None)
    events = evidence.progress.get(counter.name) or []
    ranges = batch_ranges(events, topic) if reads is not None else None
    rows = () if ranges is None else ranges[["partition", "start", "end", "late_watermark_ms"]].itertuples(index=False)
    size, slide = window_spans(counter)
    return WindowPlan(size, slide, reads, tuple(tuple(int(v) for v in row) for row in rows), final_watermark(events))


def _window_tally(results: dict[str, pa.Table], totals: dict[str, int]) -> WindowTally | None:
    if WINDOW_TOTALS not in results:
        return None
    cells = CellTotals(**{k: int(v[0]) for k, v in results[WINDOW_TOTALS].to_pydict().items()})
    return WindowTally(cells, results[WINDOW_CELLS].to_pandas(), totals["acked"], totals["unknown"])


def reconcile_with(
    run: Run,
    name: str,
    evidence: Evidence,
    hops: list[HopData],
    spans: list[FaultSpan],
    complete: bool = False,
) -> tuple[list[Reconciliation], Tallies]:
    """Every hop reconciled, and the arrivals and sendings tallied, by the engine `run` (called `name`) reading the
    run directory's segments (the loaded evidence gives the hops, the records dropped by design, the rids of the
    records the engine names and the planned span; `spans` the faults, whose downtimes and ends the tally needs);
    `complete` (an engine that can), a windowed count's cells judged too and the records the causes of a re-created
    source or of a recording's missed offsets read named (eras.py, dense_placed.py)."""
    layout = RunLayout(evidence.root)
    if evidence.pipeline.source_keys:
        raise HarnessError(
            f"{evidence.root}: the {name} engine does not yet judge a workload of several source topics "
            "(each hop against its own): the numpy engine does (--engine numpy, the default for such a run)"
        )
    dropped_rows = [identity_rows(dropped_upstream(evidence, h.producer), evidence.ids) for h in hops]
    sources = hop_sources(layout, evidence.streamlets, hops, dropped_rows, evidence.pipeline.source_header)
    views: dict[str, Source] = {SENT: ack_source(layout)}
    for i, hop in enumerate(sources):
        views[delivered_table(i)] = hop.delivered
        views[dropped_table(i)] = hop.dropped
        if hop.stored is not None:
            views[stored_table(i)] = hop.stored
    after = boundaries(spans)
    known_after = [ms for ms in after if ms is not None]
    planned_ms = planned_span_ms(evidence.resolved)
    plan = Plan(
        [h.tables for h in sources],
        downtimes(spans, evidence.progress),
        known_after,
        planned_ms,
        _at_risk(evidence, hops),
        _window_plan(evidence, hops, views) if complete else None,
        tuple(recreations(evidence.history, evidence.source_topic)) if complete else (),
        _placed(evidence, hops) if complete else (),
    )
    try:
        results = run(views, plan)
    except HarnessError:
        raise
    except Exception as exc:  # the engine's own errors (a master not answering, a worker without Python...)
        java = getattr(exc, "java_exception", None)  # Py4J's: the JVM's own message says what happened
        text = str(java.getMessage() if java is not None else exc).strip()
        first = text.splitlines()[0] if text else ""
        raise HarnessError(f"{evidence.root}: the {name} engine failed: {type(exc).__name__}: {first}") from exc
    totals = {k: int(v[0] or 0) for k, v in results[TOTALS].to_pydict().items()}
    notable = results[NOTABLE]
    columns = {c: notable[c].fill_null(0).to_numpy().astype(np.int64) for c in notable.column_names[3:]}
    rids = rids_of(notable, evidence.ids)
    late = [_late(results[late_result(i)], evidence.ids) for i in range(len(sources))]
    reconciled = [_hop(columns, rids, i, hop.tables, late[i], totals) for i, hop in enumerate(sources)]
    read = [rids_of(results[name], evidence.ids) for name in (AT_RISK, ERA_ROWS, NEIGHBOURS) if name in results]
    notable = np.unique(np.concatenate([rids, *read, *(frame.rid.to_numpy() for frame in late)]))
    copies = [
        SentCopies(totals[f"copies{i}"], totals[f"distinct{i}"], totals.get(f"kept{i}"), totals.get(f"headless{i}"))
        for i in range(len(sources))
    ]
    logged = results[LOGGED].append_column("seq_text", pa.nulls(results[LOGGED].num_rows, pa.string()))
    tallies = Tallies(
        _arrivals(results, after),
        _sendings(results[SENDINGS]),
        copies,
        notable,
        rids_of(logged, evidence.ids),
        _window_tally(results, totals),
    )
    return reconciled, tallies
