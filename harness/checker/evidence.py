"""Loading a run directory into typed, columnar evidence for the checker.

Only reads files: no broker, no Spark, no database server. Large files are
read with Arrow (CSV, JSON lines, SQLite through ADBC) into compact columns;
records are identified by one int64 `rid` = key code * 2**40 + seq, so every
join and count downstream is a vectorized operation on integers.

A missing or unreadable piece of evidence is not fatal: it is listed in
`Evidence.gaps` (file and what is wrong) and the checker reports what it
could judge. Only a missing run directory or acknowledgement log stops it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.json as pajson

from harness.errors import HarnessError
from harness.evidence.layout import RunLayout
from harness.evidence.progress import query_events

SEQ_BITS = 40
SQLITE_BATCH_ROWS = 1 << 18  # rows per block read from an egress database (the driver's default, 1024, is slow)
# Columns of an empty egress table, as loaded.
RECORD_AUDIT = {c: "int64" for c in ("rid", "batch_id", "partition", "offset", "received_ms", "event_time_ms")}
RECORD_STATE = {"rid": "int64", "batch_id": "int64"}
WINDOW_AUDIT = {c: "int64" for c in ("key", "window_start_ms", "count", "batch_id", "partition", "offset", "received_ms")}
WINDOW_STATE = {c: "int64" for c in ("key", "window_start_ms", "count", "batch_id")}


class EvidenceError(HarnessError):
    """The run directory cannot be judged at all (named in the message)."""


@dataclass(frozen=True)
class Streamlet:
    name: str
    kind: str
    settings: dict
    inputs: tuple[str, ...]  # topic names read (the source topic for an ingress)
    outputs: tuple[str, ...]


@dataclass
class Egress:
    """One egress's audit log (every delivery, in arrival order) and final state."""

    name: str
    windowed: bool
    audit: pd.DataFrame  # records: rid, key, seq, batch_id, partition, offset, received_ms, event_time_ms, batches
    state: pd.DataFrame  # records: rid, key, seq, batch_id; windows: key, window_start_ms, count, batch_id


@dataclass
class Evidence:
    root: Path
    scenario: dict  # the raw scenario as run
    resolved: dict  # duration, seed, schedule
    run: dict  # run.json (empty when the run did not finish writing it)
    keys: np.ndarray  # key dictionary: code -> key text
    sent: pd.DataFrame  # rid, key, seq, event_time_ms, late, acked, partition, offset
    history: list[dict]
    progress: dict[str, list[dict]]  # streamlet -> query events
    streamlets: list[Streamlet]  # pipeline order
    source_topic: str
    topics: dict[str, pd.DataFrame]  # hop topic -> partition, offset, timestamp_ms, rid, key, seq, batches
    egresses: list[Egress]
    gaps: list[str] = field(default_factory=list)


def rids(key_codes, seqs) -> np.ndarray:
    return (np.asarray(key_codes, dtype=np.int64) << SEQ_BITS) + np.asarray(seqs, dtype=np.int64)


def split_rid(rid) -> tuple[np.ndarray, np.ndarray]:
    rid = np.asarray(rid, dtype=np.int64)
    return rid >> SEQ_BITS, rid & ((1 << SEQ_BITS) - 1)


class _Keys:
    """One key dictionary for every table, so the same key has the same code everywhere."""

    def __init__(self, first: pa.Array):
        self.values = pc.unique(first.drop_null())

    def codes(self, keys: pa.Array) -> np.ndarray:
        distinct = pc.unique(keys.drop_null())
        extra = pc.filter(distinct, pc.invert(pc.is_in(distinct, value_set=self.values)))
        if len(extra):
            self.values = pa.concat_arrays([self.values, extra.cast(self.values.type)])
        return pc.index_in(keys, value_set=self.values).fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)


def _read_json(path: Path, gaps: list[str], what: str):
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        gaps.append(f"{path.name}: missing ({what} unknown)")
    except (ValueError, OSError) as exc:
        gaps.append(f"{path.name}: unreadable ({exc}); {what} unknown")
    return {}


def _history(path: Path, gaps: list[str]) -> list[dict]:
    events, bad = [], 0
    try:
        text = path.read_text()
    except FileNotFoundError:
        gaps.append("history.jsonl: missing (no faults, offsets or process events to attribute causes to)")
        return []
    for line in text.splitlines():
        try:
            event = json.loads(line)
            if isinstance(event, dict) and "ts_ms" in event and "event" in event:
                events.append(event)
                continue
        except ValueError:
            pass
        bad += 1
    if bad:
        gaps.append(f"history.jsonl: {bad} line(s) unreadable (truncated or corrupt), skipped")
    return events


def _acks(path: Path) -> pa.Table:
    try:
        table = pacsv.read_csv(path, convert_options=pacsv.ConvertOptions(column_types={
            "key": pa.string(), "seq": pa.int64(), "event_time_ms": pa.int64(), "late": pa.int8(),
            "status": pa.string(), "partition": pa.int32(), "offset": pa.int64()}))
    except FileNotFoundError:
        raise EvidenceError(f"{path}: missing: without the acknowledgement log there is nothing to reconcile") from None
    except (pa.ArrowInvalid, OSError) as exc:
        raise EvidenceError(f"{path}: unreadable acknowledgement log: {str(exc).splitlines()[0]}") from None
    missing = {"key", "seq", "status", "partition", "offset"} - set(table.column_names)
    if missing:
        raise EvidenceError(f"{path}: not an acknowledgement log (no column {', '.join(sorted(missing))})")
    return table


def _sent(table: pa.Table, keys: _Keys) -> pd.DataFrame:
    codes = keys.codes(table["key"])
    seq = table["seq"].to_numpy(zero_copy_only=False)
    frame = pd.DataFrame({
        "rid": rids(codes, seq), "key": codes.astype(np.int32),
        "event_time_ms": table["event_time_ms"].to_numpy(zero_copy_only=False) if "event_time_ms" in table.column_names else 0,
        "late": table["late"].to_numpy(zero_copy_only=False).astype(bool) if "late" in table.column_names else False,
        "acked": pc.equal(table["status"], "acked").to_numpy(zero_copy_only=False),
        "partition": table["partition"].fill_null(-1).to_numpy(zero_copy_only=False),
        "offset": table["offset"].fill_null(-1).to_numpy(zero_copy_only=False),
    })
    return frame


def _records(table: pa.Table, keys: _Keys, ids: bool = False) -> pd.DataFrame:
    """Arrow columns -> pandas with rid (and key code, seq when `ids`); rows without a key or seq
    (unparseable) get rid -1."""
    codes = keys.codes(table["key"])
    seq = table["seq"].fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    rid = np.where((codes < 0) | (seq < 0), -1, rids(np.maximum(codes, 0), np.maximum(seq, 0)))
    frame = {"rid": rid} | ({"key": codes, "seq": seq} if ids else {})
    for name in table.column_names:
        if name not in ("key", "seq"):
            frame[name] = table[name].to_numpy(zero_copy_only=False)
    return pd.DataFrame(frame)


def _batch_columns(frame: pd.DataFrame, batches: pa.Array) -> pd.DataFrame:
    """Add one `batch.<streamlet>` column per streamlet a record passed (its batch id there, -1 if none).

    `batches` is a struct array (topic dumps) or JSON text (egress audit), dictionary-encoded
    first so each distinct map is parsed once."""
    if pa.types.is_struct(batches.type):
        for i in range(batches.type.num_fields):
            name = batches.type.field(i).name
            frame[f"batch.{name}"] = pc.struct_field(batches, name).fill_null(-1).to_numpy(zero_copy_only=False)
        return frame
    encoded = pc.dictionary_encode(batches.fill_null("{}"))
    if isinstance(encoded, pa.ChunkedArray):
        encoded = encoded.combine_chunks()
    maps = pd.DataFrame([json.loads(text) for text in encoded.dictionary.to_pylist()])
    indices = encoded.indices.to_numpy(zero_copy_only=False)
    for name in maps.columns:
        frame[f"batch.{name}"] = maps[name].fillna(-1).astype(np.int64).to_numpy()[indices]
    return frame


def _topic_batch(batch: pa.RecordBatch, keys: _Keys) -> pd.DataFrame:
    value = batch.column("value")
    names = {value.type.field(i).name for i in range(value.type.num_fields)}

    def field(name, kind):
        return pc.struct_field(value, name).cast(kind) if name in names else pa.nulls(len(value), kind)

    columns = {"key": field("key", pa.string()), "seq": field("seq", pa.int64()), "partition": batch.column("partition"),
               "offset": batch.column("offset"), "timestamp_ms": batch.column("timestamp_ms")}
    if "count" in names:
        columns["count"] = field("count", pa.int64())
    frame = _records(pa.table(columns), keys)
    return _batch_columns(frame, pc.struct_field(value, "batches")) if "batches" in names else frame


def _topic_dump(path: Path, keys: _Keys) -> pd.DataFrame:
    """topics/<topic>.jsonl -> rid, partition, offset, timestamp_ms, batch.<streamlet>... in partition/offset order; window-count
    topics have no seq and keep their count. Read as a stream of blocks: only these columns stay in memory."""
    if path.stat().st_size == 0:
        return pd.DataFrame({c: pd.Series(dtype="int64") for c in ("rid", "partition", "offset", "timestamp_ms")})
    with pajson.open_json(path, read_options=pajson.ReadOptions(block_size=16 << 20)) as reader:
        frames = [_topic_batch(batch, keys) for batch in reader]
    frame = _fill_batches(_concat(frames, {}))
    del frames
    return frame.sort_values(["partition", "offset"], kind="stable", ignore_index=True)  # delivery order, once


def _sqlite_batches(db: Path, sql: str):
    """The query's rows as a stream of Arrow record batches (only one batch's text columns in memory)."""
    import adbc_driver_sqlite.dbapi as adbc

    with adbc.connect(f"file:{db}?mode=ro") as conn, conn.cursor() as cursor:
        cursor.adbc_statement.set_options(**{"adbc.sqlite.query.batch_rows": str(SQLITE_BATCH_ROWS)})
        cursor.execute(sql)
        yield from cursor.fetch_record_batch()


def _concat(frames: list[pd.DataFrame], empty: dict[str, str]) -> pd.DataFrame:
    if not frames:
        return pd.DataFrame({c: pd.Series(dtype=t) for c, t in empty.items()})
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]


def _egress(layout: RunLayout, streamlet: Streamlet, keys: _Keys) -> Egress:
    db = layout.egress_db(streamlet.name)
    if not db.is_file():
        raise FileNotFoundError(db)
    if streamlet.kind == "window-egress":
        audit = [_batch_columns(b.drop_columns(["batches"]).to_pandas().assign(key=keys.codes(b.column("key"))), b.column("batches"))
                 for b in _sqlite_batches(db, "SELECT key, window_start_ms, count, batch_id, kafka_partition AS partition, "
                                              "kafka_offset AS offset, received_ms, batches FROM window_audit ORDER BY rowid")]
        state = [b.to_pandas().assign(key=keys.codes(b.column("key")))
                 for b in _sqlite_batches(db, "SELECT key, window_start_ms, count, batch_id FROM windows")]
        return Egress(streamlet.name, True, _fill_batches(_concat(audit, WINDOW_AUDIT)), _fill_batches(_concat(state, WINDOW_STATE)))
    query = "audit" if streamlet.settings.get("mode") == "dedup" else "main"
    audit = [_batch_columns(_records(pa.table(b.drop_columns(["batches"])), keys), b.column("batches"))
             for b in _sqlite_batches(db, "SELECT key, seq, batch_id, kafka_partition AS partition, kafka_offset AS offset, "
                                          f"received_ms, event_time_ms, batches FROM audit WHERE query = '{query}' ORDER BY rowid")]
    state = [_records(pa.table(b), keys) for b in _sqlite_batches(db, "SELECT key, seq, batch_id FROM records")]
    return Egress(streamlet.name, False, _fill_batches(_concat(audit, RECORD_AUDIT)), _fill_batches(_concat(state, RECORD_STATE)))


def _fill_batches(frame: pd.DataFrame) -> pd.DataFrame:
    """Batch columns missing from some blocks (a streamlet a record did not pass) -> -1; then
    the small integers (key codes, partitions, batch ids) narrowed to int32: memory per record."""
    columns = [c for c in frame.columns if c.startswith("batch.")]
    frame[columns] = frame[columns].fillna(-1)
    narrow = {c: np.int32 for c in frame.columns if c in ("key", "partition", "batch_id") or c.startswith("batch.")}
    return frame.astype(narrow, copy=False)


def _streamlets(layout: RunLayout, scenario: dict, gaps: list[str]) -> list[Streamlet]:
    """The pipeline's streamlets in order, with the real topic names they read and wrote."""
    from pipelines.blueprint import parse_blueprint

    blueprint = parse_blueprint(scenario.get("blueprint"))
    found = []
    for name in blueprint.order():
        settings = _read_json(layout.driver_settings(name), gaps, f"{name}'s topics")
        if not settings:
            continue
        inputs = tuple(settings.get("inputs", {}).values()) + ((settings["source_topic"],) if settings.get("source_topic") else ())
        found.append(Streamlet(name, blueprint.streamlets[name].kind, settings.get("settings", {}), inputs,
                               tuple(settings.get("outputs", {}).values())))
    return found


def load_evidence(run_dir: Path) -> Evidence:
    root = Path(run_dir)
    if not root.is_dir():
        raise EvidenceError(f"{root}: no such run directory")
    layout = RunLayout(root)
    gaps: list[str] = []
    scenario_file = _read_json(layout.scenario, gaps, "the scenario")
    if not scenario_file.get("scenario"):
        raise EvidenceError(f"{layout.scenario}: missing or unreadable: the checker needs the scenario that was run")
    scenario = scenario_file["scenario"]
    run = _read_json(layout.summary, gaps, "how the run ended")
    ack_table = _acks(layout.ack_log)
    keys = _Keys(ack_table["key"])
    sent = _sent(ack_table, keys)
    del ack_table  # its text columns are the largest thing loaded; only the compact columns stay
    try:
        streamlets = _streamlets(layout, scenario, gaps)
    except HarnessError as exc:
        raise EvidenceError(f"{layout.scenario}: the scenario's blueprint is invalid: {exc}") from None
    source_topic = next((s.inputs[-1] for s in streamlets if s.kind == "ingress"), scenario.get("workload", {}).get("topic", {}).get("name", "source"))
    topics: dict[str, pd.DataFrame] = {}
    for topic in [t for s in streamlets if s.kind != "ingress" for t in s.inputs]:
        path = layout.topic_dump(topic)
        try:
            topics[topic] = _topic_dump(path, keys)
        except FileNotFoundError:
            gaps.append(f"topics/{topic}.jsonl: missing (hop {topic} not judged)")
        except (pa.ArrowInvalid, KeyError, OSError) as exc:
            gaps.append(f"topics/{topic}.jsonl: unreadable ({str(exc).splitlines()[0]}); hop {topic} not judged")
    egresses = []
    for s in streamlets:
        if s.kind not in ("egress", "window-egress"):
            continue
        try:
            egresses.append(_egress(layout, s, keys))
        except FileNotFoundError:
            gaps.append(f"egress/{s.name}.sqlite: missing (nothing known about what the egress received)")
        except Exception as exc:  # ADBC raises driver-specific errors for corrupt databases
            gaps.append(f"egress/{s.name}.sqlite: unreadable ({str(exc).splitlines()[0]})")
    progress = {s.name: query_events(layout.progress(s.name)) for s in streamlets}
    return Evidence(root, scenario, scenario_file.get("resolved", {}), run, keys.values.to_numpy(zero_copy_only=False),
                    sent, _history(layout.history, gaps), progress, streamlets, source_topic, topics, egresses, gaps)
