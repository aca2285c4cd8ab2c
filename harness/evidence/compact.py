"""`harness compact RUN_DIR`: a run directory's acknowledgement log, JSON-lines topic recordings, egress audit
tables and exported egress states rewritten in the columnar form (harness/evidence/acks.py, topics.py,
contract/egress_segments.py), for the checker to read quickly and the run to keep little; the report stays the same.

A Kafka output's recording has the output's identity read into its columns (pipeline.json says where it is); an
aggregate's, or a left outer join's output's, stays as it is (its values are its evidence). A file with a damaged or
cut line stays as it is (what the line held would be lost). An egress store keeps its other tables (its state,
window counts); its audit rows are deleted once their segments are written.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv

from contract.egress import AUDIT, AUDIT_COLUMNS, EXPORTED, RECORDS, STATE, STATE_COLUMNS, TOPIC
from contract.egress_segments import segment_tables
from contract.segments import PARTIAL, replace_segments
from harness.errors import HarnessError
from harness.evidence.acks import ACK_ROWS_PER_SEGMENT, ACK_TYPES
from harness.evidence.description import PipelineDescription
from harness.evidence.layout import RunLayout
from harness.evidence.topics import RecordingColumns

LINES_PER_BATCH = 100_000


@dataclass(frozen=True)
class Compacted:
    """One file, rewritten (or kept, with why)."""

    name: str  # as the run directory names it
    records: int
    bytes_before: int
    bytes_after: int
    kept_because: str | None = None


def compact_recording(dump: Path, folder: Path, identity: dict | None = None) -> int:
    """topics/<topic>.jsonl -> topics/<topic>/ segments; the dump is removed once they are written. Records written.
    Raises ValueError naming the first damaged line (nothing is removed then)."""
    columns = RecordingColumns(identity)

    def tables():
        with open(dump, "rb") as lines:
            batch: list[dict] = []
            for number, line in enumerate(lines, 1):
                if not line.endswith(b"\n"):
                    raise ValueError(f"line {number} is cut mid-record")
                try:
                    batch.append(json.loads(line))
                except ValueError:
                    raise ValueError(f"line {number} is damaged") from None
                if len(batch) == LINES_PER_BATCH:
                    yield columns.batch(batch)
                    batch = []
            yield columns.batch(batch)

    records = replace_segments(folder, tables())
    dump.unlink()
    return records


def compact_acks(path: Path, folder: Path) -> int:
    """acks.csv -> acks/ segments; the CSV is removed once they are written. Records written. Raises ValueError when
    a line is damaged or cut (nothing is removed then)."""
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        raise ValueError("its last line is cut mid-record")
    try:
        table = pacsv.read_csv(pa.BufferReader(data), convert_options=pacsv.ConvertOptions(column_types=ACK_TYPES))
    except pa.ArrowInvalid as exc:
        raise ValueError(f"a line is damaged ({str(exc).splitlines()[0]})") from None
    slices = (table.slice(start, ACK_ROWS_PER_SEGMENT) for start in range(0, table.num_rows, ACK_ROWS_PER_SEGMENT))
    replace_segments(folder, slices, ACK_ROWS_PER_SEGMENT)
    path.unlink()
    return table.num_rows


def compact_audit(db: Path, folder: Path) -> int:
    """An egress store's audit table -> egress/<streamlet>.audit/<query>/ segments, a folder per query; the table's
    rows are deleted (and the file vacuumed) once they are all written. Deliveries written. Raises ValueError when
    the store cannot be read (nothing is removed then)."""
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            queries = [q for (q,) in conn.execute(f"SELECT DISTINCT query FROM {AUDIT} ORDER BY query")]
            select = f"SELECT {', '.join(AUDIT_COLUMNS)} FROM {AUDIT} WHERE query = ? ORDER BY rowid"

            def tables(cursor):
                while rows := cursor.fetchmany(LINES_PER_BATCH):
                    yield from segment_tables(AUDIT, rows)

            # A query's folder is its rows whole; one not written yet is still read from the store.
            records = sum(replace_segments(folder / str(q), tables(conn.execute(select, (q,)))) for q in queries)
        with sqlite3.connect(db) as conn:
            conn.execute(f"DELETE FROM {AUDIT}")
        with sqlite3.connect(db, isolation_level=None) as conn:
            conn.execute("VACUUM")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # a store in WAL mode: the smaller file is the file
    except sqlite3.Error as exc:
        raise ValueError(f"the store is unreadable ({str(exc).splitlines()[0]})") from None
    return records


def compact_state(path: Path, folder: Path) -> int:
    """egress/<streamlet>.state.jsonl -> egress/<streamlet>.records/ segments (key, seq, batch_id: what the checker
    reads of an exported state); the file is removed once they are written. Records written. Raises ValueError naming
    the first damaged line (nothing is removed then)."""
    rows = []
    for number, line in enumerate(path.read_bytes().splitlines(keepends=True), 1):
        if not line.endswith(b"\n"):
            raise ValueError(f"line {number} is cut mid-record")
        try:
            row = json.loads(line)
        except ValueError:
            raise ValueError(f"line {number} is damaged") from None
        if not isinstance(row, dict):
            raise ValueError(f"line {number} is not an object")
        rows.append(tuple(row.get(c) for c in STATE_COLUMNS))
    replace_segments(folder, segment_tables(STATE, rows))
    path.unlink()
    return len(rows)


def compact_run(run_dir: Path) -> list[Compacted]:
    layout = RunLayout(Path(run_dir))
    if not layout.root.is_dir():
        raise HarnessError(f"{run_dir}: no such run directory")
    try:
        pipeline = PipelineDescription.load(layout.pipeline)
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise HarnessError(f"{layout.pipeline}: unreadable ({exc}); the outputs' identities are unknown") from None
    identities = {t: s.identity for s in pipeline.streamlets if s.egress_evidence == TOPIC for t in s.inputs}
    done = []
    if layout.ack_log.is_file() and not layout.ack_segments.exists():
        done.append(_compact(compact_acks, layout.ack_log, layout.ack_segments, "acks.csv"))
    whole = pipeline.whole_topics  # values, kept
    for dump in sorted(p for p in layout.topics.glob("*.jsonl") if p.stem not in whole):
        topic = dump.stem
        done.append(
            _compact(
                lambda source, target: compact_recording(source, target, identities.get(topic)),
                dump,
                layout.topic_segments(topic),
                f"topics/{dump.name}",
            )
        )
    for streamlet in pipeline.streamlets:
        db, state = layout.egress_db(streamlet.name), layout.egress_state(streamlet.name)
        if streamlet.egress_evidence in (RECORDS, EXPORTED) and _has_audit(db):
            name = f"egress/{db.name} ({AUDIT})"
            done.append(_compact(compact_audit, db, layout.egress_audit(streamlet.name), name))
        if state.is_file():
            name = f"egress/{state.name}"
            done.append(_compact(compact_state, state, layout.egress_records(streamlet.name), name))
    return done


def _has_audit(db: Path) -> bool:
    """Whether an egress store holds audit rows (a run recorded in columnar form holds none)."""
    if not db.is_file():
        return False
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            return conn.execute(f"SELECT 1 FROM {AUDIT} LIMIT 1").fetchone() is not None
    except sqlite3.Error:  # no audit table, or a damaged file: left as it is
        return False


def _compact(rewrite, source: Path, target: Path, name: str) -> Compacted:
    size = source.stat().st_size
    if target.exists():
        return Compacted(name, 0, size, size, f"{target.name}/ exists already")
    try:
        records = rewrite(source, target)
    except ValueError as exc:
        shutil.rmtree(target.with_name(target.name + PARTIAL), ignore_errors=True)
        return Compacted(name, 0, size, size, f"{exc}: kept whole")
    after = sum(p.stat().st_size for p in target.rglob("*") if p.is_file())
    return Compacted(name, records, size, after + (source.stat().st_size if source.exists() else 0))
