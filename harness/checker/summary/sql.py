"""The reconciliation's one SQL text, in the dialect DuckDB and Spark SQL share (CASE sums, window functions; no
engine's own functions), so that both engines count the same by construction.

Tables (harness/checker/summary/identities.py SCHEMA): `sent` (the acknowledgement log's lines), and per hop i
`d{i}` (its deliveries), `s{i}` (its final state, for an egress that keeps one) and `x{i}` (the records dropped by
design upstream of it). One aggregation over every row, tagged with its table, gives each record's summary: its
lines, whether any says acknowledged, the line the loader keeps, and per hop its copies delivered and stored, where
each first is, and whether it was dropped by design. Out of it come the totals and the records with anything to
say (any hop other than exactly one copy, or not acknowledged, or dropped by design), and per hop the first
deliveries whose seq is below one delivered before them.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.checker.record_ids import SEQ_BITS

SENT = "sent"
SUMMARY = "summary"
TOTALS = "totals"
NOTABLE = "notable"
PARTITION_PLACE = 1 << 40  # a topic's copy is at partition * this + offset (offsets stay below it)


@dataclass(frozen=True)
class HopTables:
    """Which tables a hop has: a state of its own (an egress) or not (a topic: what it delivered stays); whether
    its deliveries are in a topic's order (by partition, then offset) or in arrival order (an egress's audit); and
    whether a key's order is judged in each partition apart (an application's output topic, keyed its own way)."""

    stored: bool
    topic_order: bool
    per_partition: bool = False


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


def _at(hop: HopTables) -> str:
    """A delivery's place in the order the hop is judged in."""
    return f"part * {PARTITION_PLACE} + off" if hop.topic_order else "pos"


def _summary(hops: list[HopTables]) -> str:
    tagged = [f"SELECT key, seq, seq_text, 0 AS src, acked, line_rank, pos, 0 AS part FROM {SENT}"]
    columns = [
        "SUM(CASE WHEN src = 0 THEN 1 ELSE 0 END) AS lines",
        "MAX(CASE WHEN src = 0 THEN acked ELSE 0 END) AS acked",
        "MIN(CASE WHEN src = 0 THEN line_rank END) AS kept",
    ]
    for i, hop in enumerate(hops):
        tags = {"d": 3 * i + 1, "s": 3 * i + 2, "x": 3 * i + 3}
        tagged.append(f"SELECT key, seq, seq_text, {tags['d']}, 0, 0, {_at(hop)}, part FROM {delivered_table(i)}")
        tagged.append(f"SELECT key, seq, seq_text, {tags['x']}, 0, 0, 0, 0 FROM {dropped_table(i)}")
        columns += [
            f"SUM(CASE WHEN src = {tags['d']} THEN 1 ELSE 0 END) AS d{i}",
            f"MIN(CASE WHEN src = {tags['d']} THEN pos END) AS d{i}_at",
            f"MAX(CASE WHEN src = {tags['x']} THEN 1 ELSE 0 END) AS x{i}",
        ]
        if hop.per_partition:  # the first copy's partition: the lowest (a topic's order is by partition first)
            columns.append(f"MIN(CASE WHEN src = {tags['d']} THEN part END) AS d{i}_part")
        if hop.stored:
            tagged.append(f"SELECT key, seq, seq_text, {tags['s']}, 0, 0, pos, 0 FROM {stored_table(i)}")
            columns += [
                f"SUM(CASE WHEN src = {tags['s']} THEN 1 ELSE 0 END) AS s{i}",
                f"MIN(CASE WHEN src = {tags['s']} THEN pos END) AS s{i}_at",
            ]
    union = "\n  UNION ALL ".join(tagged)
    aggregates = ",\n  ".join(columns)
    return f"SELECT key, seq, seq_text,\n  {aggregates}\nFROM (\n  {union}\n) tagged\nGROUP BY key, seq, seq_text"


def _ordinary(hops: list[HopTables]) -> str:
    """What a record is when it has nothing to say: acknowledged, once at every hop, not dropped by design."""
    once = [f"d{i} = 1 AND x{i} = 0" + (f" AND s{i} = 1" if hop.stored else "") for i, hop in enumerate(hops)]
    return " AND ".join(["lines > 0", "acked = 1", *once])


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


def statements(hops: list[HopTables]) -> list[Statement]:
    """The reconciliation of a run with these hops, in order."""
    return [
        Statement(SUMMARY, _summary(hops), keep=True),
        Statement(
            TOTALS,
            "SELECT COUNT(*) AS records, COALESCE(SUM(CASE WHEN lines > 0 AND acked = 1 THEN 1 ELSE 0 END), 0) AS "
            "acked, COALESCE(SUM(CASE WHEN lines > 0 AND acked = 0 THEN 1 ELSE 0 END), 0) AS unknown "
            f"FROM {SUMMARY}",
            keep=False,
        ),
        Statement(NOTABLE, f"SELECT * FROM {SUMMARY} WHERE NOT ({_ordinary(hops)})", keep=False),
        *[Statement(late_result(i), _reordered(i, hop), keep=False) for i, hop in enumerate(hops)],
    ]
