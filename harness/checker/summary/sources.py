"""Where an engine reads each table of the reconciliation: the acknowledgement log, and per hop its deliveries
(in the order they are judged in) and, for an egress with a state of its own, its final state.

A table is folders of segments (read in order), a query of an egress's SQLite store, or rows the checker has
already (the records dropped by design upstream of a hop). The same places the loader reads
(harness/checker/load.py, egress_readers.py), in columnar form only: a run recorded in JSON is converted by
`harness compact` first.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from contract.egress import AUDIT, EXPORTED, MAIN_QUERY, RECORDS, TOPIC
from contract.segments import segments
from harness.checker.egress_readers import STATE_QUERY
from harness.checker.file_readers import EvidenceError
from harness.checker.intermediate import HopData
from harness.checker.summary.sql import HopTables
from harness.evidence.acks import ack_folders
from harness.evidence.layout import RunLayout

COMPACT_FIRST = "convert it with `harness compact RUN_DIR` first (the engines read columnar evidence)"


@dataclass(frozen=True)
class Source:
    """One table of identities: folders of segments, an SQLite query, or rows at hand (`rows`)."""

    folders: tuple[str, ...] = ()
    db: str = ""
    sql: str = ""
    rows: pa.Table | None = None
    acks: bool = False  # the acknowledgement log: each line's status and resend mark besides its identity
    timed: bool = False  # its times are read too (identities.py TIMES): the acknowledgement log, an egress's arrivals
    header: str | None = None  # a topic's copies: the header every source record carries, looked for in each

    def parts(self) -> list[tuple[int, int, str]]:
        """What can be read apart (a Spark partition each): (folder number, segment number, path) per segment;
        one part for a query or rows at hand."""
        if self.folders:
            return [(f, s, str(p)) for f, folder in enumerate(self.folders) for s, p in enumerate(segments(folder))]
        return [(0, 0, self.db)]


@dataclass(frozen=True)
class HopSources:
    """A hop's tables: its deliveries, its final state (None: what it delivered stays, a topic), the records
    dropped by design upstream of it, and how its order is judged."""

    name: str
    delivered: Source
    stored: Source | None
    dropped: Source
    tables: HopTables


def _folder(path: Path, what: str, timed: bool = False, header: str | None = None) -> Source:
    if not path.is_dir():
        raise EvidenceError(f"{path}: {what} is not in columnar form: {COMPACT_FIRST}")
    return Source(folders=(str(path),), timed=timed, header=header)


def ack_source(layout: RunLayout) -> Source:
    log = layout.written_ack_log
    if not log.is_dir():
        raise EvidenceError(f"{log}: the acknowledgement log is not in columnar form: {COMPACT_FIRST}")
    return Source(folders=tuple(str(p) for p in ack_folders(log)), acks=True, timed=True)


def _egress(layout: RunLayout, streamlet, dropped: Source) -> HopSources:
    name = streamlet.name
    if streamlet.egress_evidence == TOPIC:
        (topic,) = streamlet.inputs
        output = _folder(layout.topic_segments(topic), f"output topic {topic}", timed=True)
        return HopSources(
            name, output, None, dropped, HopTables(stored=False, topic_order=True, per_partition=True, egress=True)
        )
    query = streamlet.audit_query or MAIN_QUERY
    audit = layout.egress_audit(name) / query
    db = layout.egress_db(name)
    if audit.is_dir():
        delivered = Source(folders=(str(audit),), timed=True)
    else:
        delivered = Source(
            db=str(db),
            sql=f"SELECT key, seq, received_ms, event_time_ms FROM {AUDIT} WHERE query = '{query}' ORDER BY rowid",
            timed=True,
        )
    records = layout.egress_records(name)
    if records.is_dir():
        stored = Source(folders=(str(records),))
    elif streamlet.egress_evidence == RECORDS:
        stored = Source(db=str(db), sql=STATE_QUERY)
    else:
        assert streamlet.egress_evidence == EXPORTED
        state = layout.egress_state(name)
        raise EvidenceError(f"{state}: egress {name}'s state is not in columnar form: {COMPACT_FIRST}")
    return HopSources(name, delivered, stored, dropped, HopTables(stored=True, topic_order=False, egress=True))


def hop_sources(
    layout: RunLayout, streamlets, hops: list[HopData], dropped: list[pa.Table], header: str | None = None
) -> list[HopSources]:
    """The tables of each hop the checker judges (harness/checker/hops.py hop_data), in its order; `dropped`: per
    hop, the identities of the records dropped by design upstream of it; `header`: the one every source record
    carries, looked for in the topics' copies (pipeline.json source_header)."""
    by_name = {s.name: s for s in streamlets}
    sources = []
    for hop, rows in zip(hops, dropped):
        if hop.kind == "topic":
            folder = _folder(layout.topic_segments(hop.name), f"topic {hop.name}", header=header or None)
            tables = HopTables(stored=False, topic_order=True, header=bool(header))
            sources.append(HopSources(hop.name, folder, None, Source(rows=rows), tables))
        else:
            sources.append(_egress(layout, by_name[hop.name], Source(rows=rows)))
    return sources
