"""The reconciliation's one SQL text, which Spark runs, in plain SQL (CASE sums, window functions; no engine's own
functions); the dense engine answers the same plan, statement by statement, with results of the same shape.

Tables (harness/checker/summary/identities.py SCHEMA, and TIMES for the timed ones): `sent` (the acknowledgement
log's lines), and per hop i `d{i}` (its deliveries), `s{i}` (its final state, for an egress that keeps one) and
`x{i}` (the records dropped by design upstream of it). One aggregation over every row, tagged with its table, gives
each record's summary: its lines, whether any says acknowledged, the line the loader keeps, and per hop its copies
delivered and stored, where each first is, and whether it was dropped by design. Out of it come the totals and the
records with anything to say (any hop other than exactly one copy, or not acknowledged, or dropped by design), and
per hop the first deliveries whose seq is below one delivered before them. Each record's first delivery at the first
egress and its kept line, found by where the summary says they are, give the tallies: the arrivals'
(harness/checker/arrivals.py) and the sendings' (harness/checker/periods.py). Last, the records at the offsets a
retention shrink deleted, which its cause reads whether they were lost or not.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.checker.eras import Recreation
from harness.checker.periods import LENGTHS_S, MOST_PERIODS
from harness.checker.record_ids import SEQ_BITS

SENT = "sent"
SUMMARY = "summary"
TOTALS = "totals"
NOTABLE = "notable"
LATENCIES = "latencies"
SENDINGS = "sendings"
FIRST_AFTER = "first_after"
FIRSTS = "firsts"
AT_RISK = "at_risk"
ERA_ROWS = "era_rows"  # the records a re-created source's causes read (eras.py): the dense engine's alone
NEIGHBOURS = "neighbours"  # the records placing one a recording missed (dense_placed.py): the dense engine's alone
LOGGED = "logged"  # each key's highest ordinary seq in the acknowledgement log (harness/checker/unfinished.py)
PARTITION_PLACE = 1 << 40  # a topic's copy is at partition * this + offset (offsets stay below it)
# A windowed count's tables and results, which the dense engine answers (no statement of the SQL text: Spark's
# checks of windowed runs load the evidence whole)
WINDOW_DELIVERIES = "window_deliveries"  # key, window_start_ms: each window delivered to the egress
WINDOW_COUNTS = "window_counts"  # key, window_start_ms, count: the egress's final state
WINDOW_TOTALS = "window_totals"  # window_cells.CellTotals, one row
WINDOW_CELLS = "window_cells"  # the anomalous cells: key, window_start_ms, window_cells.COLUMNS


@dataclass(frozen=True)
class HopTables:
    """Which tables a hop has: a state of its own (an egress) or not (a topic: what it delivered stays); whether
    its deliveries are in a topic's order (by partition, then offset) or in arrival order (an egress's audit); and
    whether a key's order is judged in each partition apart (an application's output topic, keyed its own way)."""

    stored: bool
    topic_order: bool
    per_partition: bool = False
    egress: bool = False  # the pipeline's output (its arrivals are tallied), else an intermediate topic
    header: bool = False  # its copies are looked at for the header every source record carries (headless)


@dataclass(frozen=True)
class Statement:
    name: str
    sql: str
    keep: bool  # a table the next statements read; otherwise a result the checker reads


def delivered_table(i: int) -> str:
    return f"d{i}"


def stored_table(i: int) -> str:
    return f"s{i}"


def dropped_table(i: int) -> str:
    return f"x{i}"


def late_result(i: int) -> str:
    return f"late{i}"


def _at(hop: HopTables, table: str = "") -> str:
    """A delivery's place in the order the hop is judged in (`table`: the name its columns are qualified with)."""
    return f"{table}part * {PARTITION_PLACE} + {table}off" if hop.topic_order else f"{table}pos"


def first_egress(hops: list[HopTables]) -> int | None:
    """The hop whose first arrivals make the latency."""
    return next((i for i, hop in enumerate(hops) if hop.egress), None)


def _summary(hops: list[HopTables]) -> str:
    # every table's rows have `headless` (identities.py: 1 for a copy without the header looked for, else 0)
    tagged = [f"SELECT key, seq, seq_text, 0 AS src, acked, line_rank, pos, 0 AS part, off, headless FROM {SENT}"]
    columns = [
        "SUM(CASE WHEN src = 0 THEN 1 ELSE 0 END) AS lines",
        "MAX(CASE WHEN src = 0 THEN acked ELSE 0 END) AS acked",
        "MIN(CASE WHEN src = 0 THEN line_rank END) AS kept",
        "MIN(CASE WHEN src = 0 THEN off END) AS sent_off",
    ]
    for i, hop in enumerate(hops):
        tags = {"d": 3 * i + 1, "s": 3 * i + 2, "x": 3 * i + 3}
        delivered = f"{tags['d']}, 0, 0, {_at(hop)}, part, 0, headless"
        tagged.append(f"SELECT key, seq, seq_text, {delivered} FROM {delivered_table(i)}")
        tagged.append(f"SELECT key, seq, seq_text, {tags['x']}, 0, 0, 0, 0, 0, 0 FROM {dropped_table(i)}")
        columns += [
            f"SUM(CASE WHEN src = {tags['d']} THEN 1 ELSE 0 END) AS d{i}",
            f"MIN(CASE WHEN src = {tags['d']} THEN pos END) AS d{i}_at",
            f"MAX(CASE WHEN src = {tags['x']} THEN 1 ELSE 0 END) AS x{i}",
        ]
        if hop.header:
            columns.append(f"SUM(CASE WHEN src = {tags['d']} THEN headless ELSE 0 END) AS h{i}")
        if hop.per_partition:  # the first copy's partition: the lowest (a topic's order is by partition first)
            columns.append(f"MIN(CASE WHEN src = {tags['d']} THEN part END) AS d{i}_part")
        if hop.stored:
            tagged.append(f"SELECT key, seq, seq_text, {tags['s']}, 0, 0, pos, 0, 0, 0 FROM {stored_table(i)}")
            columns += [
                f"SUM(CASE WHEN src = {tags['s']} THEN 1 ELSE 0 END) AS s{i}",
                f"MIN(CASE WHEN src = {tags['s']} THEN pos END) AS s{i}_at",
            ]
    union = "\n  UNION ALL ".join(tagged)
    aggregates = ",\n  ".join(columns)
    return f"SELECT key, seq, seq_text,\n  {aggregates}\nFROM (\n  {union}\n) tagged\nGROUP BY key, seq, seq_text"


def _ordinary(hops: list[HopTables]) -> str:
    """What a record is when it has nothing to say: one acknowledgement line (several, or one without an offset, the
    loader names in a gap), acknowledged, once at every hop, not dropped by design."""
    once = [f"d{i} = 1 AND x{i} = 0" + (f" AND s{i} = 1" if hop.stored else "") for i, hop in enumerate(hops)]
    return " AND ".join(["lines = 1", "acked = 1", "sent_off >= 0", *once])


def _reordered(i: int, hop: HopTables) -> str:
    """Hop i's first deliveries (each record's first place: its summary's d{i}_at) of ordinary records whose seq is
    below the highest of their key delivered before them (in the same partition, for a hop judged per partition)."""
    within = f"key, d{i}_part" if hop.per_partition else "key"
    before = (
        f"SELECT key, seq, d{i}_at AS place, MAX(seq) OVER (PARTITION BY {within} ORDER BY d{i}_at "
        f"ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS after_seq FROM {SUMMARY} "
        f"WHERE d{i} > 0 AND key IS NOT NULL AND seq_text IS NULL AND seq >= 0 AND seq < {1 << SEQ_BITS}"
    )
    return f"SELECT key, seq, place, after_seq FROM ({before}) ranked WHERE seq < after_seq"


def _first_arrivals(hops: list[HopTables]) -> str:
    """Each record's first arrival at the first egress (found by its place, which names one row: a topic's partition
    and offset, a row's place in its segments): when, the event time the egress recorded, and the record's kept
    acknowledgement line. A table of its own, so that each statement holds one join's table in memory."""
    e = first_egress(hops)
    return (
        f"SELECT d.time_ms AS arrived_ms, d.event_ms, s.kept FROM {SUMMARY} s "
        f"JOIN {delivered_table(e)} d ON {_at(hops[e], 'd.')} = s.d{e}_at WHERE s.d{e} > 0"
    )


def _latencies(downtimes: list[tuple[int, int]]) -> str:
    """Per whole number of ms from event time to first arrival at the first egress (on-time records whose event
    time is known: the one the egress recorded, else the kept acknowledgement line's), how many records took it
    and how much of their time fell within the downtimes."""
    overlaps = [f"GREATEST(LEAST(arrived_ms, {end}) - GREATEST(sent, {start}), 0)" for start, end in downtimes]
    firsts = (
        "SELECT f.arrived_ms, CASE WHEN f.event_ms >= 0 THEN f.event_ms ELSE a.event_ms END AS sent "
        f"FROM {FIRSTS} f LEFT JOIN {SENT} a ON a.line_rank = f.kept WHERE a.late IS NULL OR a.late = 0"
    )
    return (
        f"SELECT arrived_ms - sent AS latency_ms, COUNT(*) AS records, SUM({' + '.join(overlaps) or '0'}) AS "
        f"waiting_ms FROM ({firsts}) firsts WHERE sent IS NOT NULL GROUP BY arrived_ms - sent"
    )


def _first_after(hops: list[HopTables], after: list[int]) -> str:
    """The first arrival at any egress after each of `after` (ms)."""
    arrivals = " UNION ALL ".join(f"SELECT time_ms FROM {delivered_table(i)}" for i, h in enumerate(hops) if h.egress)
    firsts = ", ".join(f"MIN(CASE WHEN time_ms > {ms} THEN time_ms END) AS after{k}" for k, ms in enumerate(after))
    return f"SELECT {firsts} FROM ({arrivals}) arrivals"


def _sendings(planned_ms: int) -> str:
    """The records sent, by the kept line's event time, per period of the grid periods.py cuts (a length from
    LENGTHS_S by the span, or the planned span if longer; the slot after the last: the records whose time is not
    known): how many acknowledged and how many of unknown outcome, with the grid's start, end and length."""
    lengths = " ".join(f"WHEN span < {s * 1000 * MOST_PERIODS} THEN {s * 1000}" for s in LENGTHS_S)
    kept = (
        f"SELECT a.event_ms, a.late, s.acked FROM {SUMMARY} s JOIN {SENT} a ON a.line_rank = s.kept WHERE s.lines > 0"
    )
    bounds = (
        "SELECT COALESCE(MIN(CASE WHEN event_ms > 0 AND late = 0 THEN event_ms END), "
        "MIN(CASE WHEN event_ms > 0 THEN event_ms END)) AS start_ms, MAX(CASE WHEN event_ms > 0 THEN event_ms END) "
        "AS end_ms FROM kept"
    )
    spans = f"SELECT start_ms, end_ms, GREATEST(end_ms - start_ms, {planned_ms}) AS span FROM bounds"
    grid = f"SELECT start_ms, end_ms, CASE {lengths} ELSE {LENGTHS_S[-1] * 1000} END AS length_ms FROM ({spans}) spans"
    last = "CAST(FLOOR((g.end_ms - g.start_ms) / CAST(g.length_ms AS DOUBLE)) AS BIGINT)"
    period = "CAST(FLOOR((k.event_ms - g.start_ms) / CAST(g.length_ms AS DOUBLE)) AS BIGINT)"
    slot = f"CASE WHEN k.event_ms > 0 THEN LEAST(GREATEST({period}, 0), {last}) ELSE {last} + 1 END"
    return (
        f"WITH kept AS ({kept}), bounds AS ({bounds}), grid AS ({grid}) "
        f"SELECT {slot} AS slot, SUM(k.acked) AS acked, SUM(1 - k.acked) AS unknown, MIN(g.start_ms) AS start_ms, "
        "MIN(g.end_ms) AS end_ms, MIN(g.length_ms) AS length_ms "
        f"FROM kept k CROSS JOIN grid g WHERE g.start_ms IS NOT NULL GROUP BY {slot}"
    )


def _totals(hops: list[HopTables]) -> str:
    """The records acknowledged and of unknown outcome; per hop i, the copies of records sent (copies{i}), how many
    records sent it has (distinct{i}), for an egress the copies its state kept beyond one (kept{i}), and where a
    header is looked for the copies of records sent without it (headless{i})."""
    counted = {"acked": "lines > 0 AND acked = 1 THEN 1", "unknown": "lines > 0 AND acked = 0 THEN 1"}
    for i, hop in enumerate(hops):
        counted[f"copies{i}"] = f"lines > 0 THEN d{i}"
        counted[f"distinct{i}"] = f"lines > 0 AND d{i} > 0 THEN 1"
        if hop.egress or hop.stored:  # its state: its own, or what it delivered (an output topic keeps it all)
            kept = f"s{i}" if hop.stored else f"d{i}"
            counted[f"kept{i}"] = f"lines > 0 AND {kept} > 1 THEN {kept} - 1"
        if hop.header:
            counted[f"headless{i}"] = f"lines > 0 THEN h{i}"
    sums = ", ".join(f"COALESCE(SUM(CASE WHEN {case} ELSE 0 END), 0) AS {name}" for name, case in counted.items())
    return f"SELECT COUNT(*) AS records, {sums} FROM {SUMMARY}"


def _at_risk(ranges: dict[str, list[tuple[int, int, int]]]) -> str:
    """The records with a row in any of `ranges` (per table: partition, first offset, end offset): every record a
    retention shrink put at risk, which its cause counts whether lost or not (harness/checker/causes.py)."""
    found = []
    for table, within in sorted(ranges.items()):
        ors = " OR ".join(f"(part = {p} AND off >= {low} AND off < {high})" for p, low, high in within)
        found.append(f"SELECT key, seq, seq_text FROM {table} WHERE {ors}")
    return "\n  UNION ".join(found)


@dataclass(frozen=True)
class WindowPlan:
    """A keyed count per event-time window to judge, cell by cell (harness/checker/windows.py): windows `size_ms`
    long every `slide_ms`; the table whose copies the counter read (SENT, a hop's deliveries; None: not recorded, so
    no record is known dropped) and the batches' offset ranges it read them by (partition, first offset, end offset,
    the watermark that batch filtered late rows with); the counter's last watermark (a window ending after it was not
    due); the egress's tables WINDOW_DELIVERIES and WINDOW_COUNTS."""

    size_ms: int
    slide_ms: int
    reads: str | None
    ranges: tuple[tuple[int, int, int, int], ...]
    final_watermark_ms: int


@dataclass(frozen=True)
class Plan:
    """What an engine counts: the reconciliation of a run with these hops, in order, and the tallies: of its
    arrivals (their latencies and waiting within `downtimes` (ms), the first after each of `after` (ms)) and of its
    sendings (per period of a run planned to send for `planned_ms`); and the records in the offset ranges `at_risk`
    (per table: partition, first offset, end offset); a windowed count's cells (`windows`) and the records the causes
    of the source topic's re-creations read (`recreations`) and those placing a record a topic's recording missed
    where a retention shrink deleted (`placed`: per topic hop, those partitions), the dense engine's alone."""

    hops: list[HopTables]
    downtimes: list[tuple[int, int]]
    after: list[int]
    planned_ms: int
    at_risk: dict[str, list[tuple[int, int, int]]]
    windows: WindowPlan | None = None
    recreations: tuple[Recreation, ...] = ()
    placed: tuple[tuple[int, tuple[int, ...]], ...] = ()


def _logged() -> str:
    """Each key's highest ordinary seq among the acknowledgement log's lines."""
    return (
        f"SELECT key, MAX(seq) AS seq FROM {SENT} WHERE key IS NOT NULL AND seq_text IS NULL AND seq >= 0 "
        f"AND seq < {1 << SEQ_BITS} GROUP BY key"
    )


def statements(plan: Plan) -> list[Statement]:
    """The plan as statements of the one SQL text, in order."""
    hops, downtimes, after, at_risk = plan.hops, plan.downtimes, plan.after, plan.at_risk
    arrivals = []
    if first_egress(hops) is not None:
        arrivals.append(Statement(FIRSTS, _first_arrivals(hops), keep=True))
        arrivals.append(Statement(LATENCIES, _latencies(downtimes), keep=False))
        if after:
            arrivals.append(Statement(FIRST_AFTER, _first_after(hops, after), keep=False))
    return [
        Statement(SUMMARY, _summary(hops), keep=True),
        Statement(TOTALS, _totals(hops), keep=False),
        Statement(NOTABLE, f"SELECT * FROM {SUMMARY} WHERE NOT ({_ordinary(hops)})", keep=False),
        *[Statement(late_result(i), _reordered(i, hop), keep=False) for i, hop in enumerate(hops)],
        *arrivals,
        Statement(SENDINGS, _sendings(plan.planned_ms), keep=False),
        Statement(LOGGED, _logged(), keep=False),
        *([Statement(AT_RISK, _at_risk(at_risk), keep=False)] if at_risk else []),
    ]
