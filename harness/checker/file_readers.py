"""The run directory's files read into columns: JSON files, JSON-lines logs, the acknowledgement log, topic dumps
and the records streamlets declared dropped.

Large files are read with Arrow in blocks. A missing or unreadable file is not fatal: it is listed in `gaps`
(file and what is wrong). A last line cut mid-record (what a SIGKILL leaves) is dropped and listed; a damaged
line in the middle is skipped and named by its line number.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, TypeVar

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.json as pajson

from contract.applications import APPLICATION, OUTPUT_KINDS
from contract.segments import each_segment
from harness.checker.read_ahead import read_ahead
from harness.checker.record_ids import INTEGER, RecordIds
from harness.checker.rid_sets import isin, more_than_once
from harness.checker.selection import Selection, selected
from harness.checker.snapshot import as_first
from harness.errors import HarnessError
from harness.evidence.acks import ACK_TYPES, ack_folders
from harness.evidence.checkpoint import batch_events, merged_events
from harness.evidence.description import StreamletDescription
from harness.evidence.layout import RunLayout
from harness.evidence.topics import BATCH_PREFIX

F = TypeVar("F", pd.DataFrame, dict)  # columns: a frame, or a dict of arrays


def read_json(path: Path, gaps: list[str], what: str) -> dict:
    """A JSON object file ({} when missing, unreadable or not an object: listed in gaps)."""
    try:
        value = json.loads(path.read_text())
        if isinstance(value, dict):
            return value
        gaps.append(f"{path.name}: not a JSON object; {what} unknown")
    except FileNotFoundError:
        gaps.append(f"{path.name}: missing ({what} unknown)")
    except (ValueError, OSError) as exc:
        gaps.append(f"{path.name}: unreadable ({exc}); {what} unknown")
    return {}


class EvidenceError(HarnessError):
    """The run directory cannot be judged at all (named in the message)."""


def json_lines(path: Path, name: str, gaps: list[str], required: tuple[str, ...]) -> list[dict] | None:
    """Every whole JSON object line with the required fields (None: no such file). A cut last line and
    damaged lines in the middle are skipped and listed in gaps."""
    try:
        text = as_first(path, path.read_bytes())  # a run still going: as the check first read it
    except FileNotFoundError:
        return None
    lines = text.split(b"\n")
    if lines[-1].strip():
        gaps.append(f"{name}: last line cut mid-record ({lines[-1][:60]!r}), dropped")
    events, bad = [], []
    for number, line in enumerate(lines[:-1], 1):
        try:
            event = json.loads(line)
            if isinstance(event, dict) and all(k in event for k in required):
                events.append(event)
                continue
        except ValueError:
            pass
        if line.strip():
            bad.append(number)
    if bad:
        gaps.append(
            f"{name}: {len(bad)} damaged line(s) skipped (line "
            f"{', '.join(map(str, bad[:5]))}{', ...' if len(bad) > 5 else ''})"
        )
    return events


def read_history(path: Path, gaps: list[str]) -> list[dict] | None:
    events = json_lines(path, "history.jsonl", gaps, ("ts_ms", "event"))
    if events is None:
        gaps.append("history.jsonl: missing (no faults, offsets or process events to attribute causes to)")
    return events


def read_progress(
    layout: RunLayout, streamlets: tuple[StreamletDescription, ...], gaps: list[str]
) -> dict[str, list[dict] | None]:
    """Each streamlet's query events; None where its progress file is missing (its recovery times are unknown). An
    application's come from its progress file, recorded from its checkpoint as it ran, and from its checkpoint
    (harness/evidence/checkpoint.py); an output runs no query."""
    found = {}
    for s in streamlets:
        if s.kind in OUTPUT_KINDS:
            continue
        if s.kind == APPLICATION:  # recorded as it ran (a run before that records none), and what the checkpoint kept
            recorded = json_lines(layout.progress(s.name), f"progress/{s.name}.jsonl", gaps, ("event",)) or []
            found[s.name] = merged_events(recorded, batch_events(layout.checkpoints(s.name)))
            continue
        found[s.name] = json_lines(layout.progress(s.name), f"progress/{s.name}.jsonl", gaps, ("event",))
        if found[s.name] is None:
            gaps.append(
                f"progress/{s.name}.jsonl: missing (when {s.name} ran its batches, and so its recovery times, unknown)"
            )
    return found


def _whole_lines(path: Path, gaps: list[str], name: str, torn: list[bytes] | None = None) -> pa.Buffer:
    """The file's bytes up to its last newline: a last line without one was cut mid-record (a writer
    killed while appending) and is dropped, listed in gaps (and its bytes put in `torn`). Memory-mapped:
    nothing is copied."""
    data = pa.memory_map(str(path)).read_buffer()
    if not data.size or data[-1:].to_pybytes() == b"\n":
        return data
    tail_start = max(0, data.size - (1 << 16))
    tail = data.slice(tail_start).to_pybytes()
    cut = tail.rfind(b"\n")
    while cut < 0 and tail_start > 0:  # a torn line longer than 64 KiB: look further back
        tail_start = max(0, tail_start - (1 << 20))
        tail = data.slice(tail_start).to_pybytes()
        cut = tail.rfind(b"\n")
    keep = tail_start + cut + 1 if cut >= 0 else 0
    fragment = data.slice(keep).to_pybytes()
    if torn is not None:
        torn.append(fragment)
    gaps.append(f"{name}: last line cut mid-record ({fragment[:60]!r}), dropped")
    return data.slice(0, keep)


def read_acks(path: Path, gaps: list[str], selection: Selection | None = None) -> pa.Table:
    """The acknowledgement log: acks.csv, or a folder of segments (written columnar: harness/workload/generator.py);
    with a `selection`, only the lines of its records (a segment's other lines let go as it is read)."""
    if path.is_dir():
        return _ack_segments(path, gaps, selection)
    torn: list[bytes] = []
    try:
        data = _whole_lines(path, gaps, "acks.csv", torn)
    except FileNotFoundError:
        raise EvidenceError(f"{path}: missing: without the acknowledgement log there is nothing to reconcile") from None
    except OSError as exc:
        raise EvidenceError(f"{path}: unreadable acknowledgement log: {exc}") from None
    damaged: list[str] = []

    def skip(row) -> str:
        if len(damaged) < 5:  # name the first few by their line number (a scan: only on damage)
            text = row.text.encode()
            number = next((i for i, line in enumerate(data.to_pybytes().split(b"\n"), 1) if line == text), None)
            damaged.append(f"line {number}" if number else "a line")
        else:
            damaged.append("")
        return "skip"

    def read(types: dict) -> pa.Table:
        damaged.clear()
        # One thread: the handler is Python, and a reader thread still calling it while the error that ends the
        # command unwinds aborted the interpreter at exit once ("terminate called without an active exception").
        return pacsv.read_csv(
            pa.BufferReader(data),
            read_options=pacsv.ReadOptions(use_threads=False),
            parse_options=pacsv.ParseOptions(invalid_row_handler=skip),
            convert_options=pacsv.ConvertOptions(column_types=types),
        )

    try:
        try:
            table = read(ACK_TYPES)
        except pa.ArrowInvalid:  # a value of the wrong type somewhere: read as text, find the lines
            table = _typed_acks(read({name: pa.string() for name in ACK_TYPES}), damaged)
    except (pa.ArrowInvalid, OSError) as exc:
        raise EvidenceError(f"{path}: unreadable acknowledgement log: {str(exc).splitlines()[0]}") from None
    missing = {"key", "seq", "status", "partition", "offset"} - set(table.column_names)
    if missing:
        raise EvidenceError(f"{path}: not an acknowledgement log (no column {', '.join(sorted(missing))})")
    if damaged:
        gaps.append(
            f"acks.csv: {len(damaged)} damaged line(s) skipped ({', '.join(d for d in damaged[:5] if d)}"
            f"{', ...' if len(damaged) > 5 else ''}): those records' outcomes are unknown to the checker"
        )
    return _selected_lines(_with_torn_record(table, torn, gaps), selection)


PLACE_BITS = 40  # a place, partition << PLACE_BITS | offset: offsets below 2^40 (a trillion records a partition)


def acked_at(path: Path, places: np.ndarray) -> pd.DataFrame:
    """The acknowledgement log's acknowledged lines (key, seq, partition, offset) at `places` (partition <<
    PLACE_BITS | offset), a segment at a time: a second reading of the log, for the few places a check asks about."""
    wanted = pa.array(np.unique(places).astype(np.int64))

    def at_places(table: pa.Table) -> pa.Table:
        place = pc.add(
            pc.shift_left(pc.cast(table["partition"], pa.int64()), PLACE_BITS), pc.cast(table["offset"], pa.int64())
        )
        keep = pc.and_(pc.fill_null(pc.equal(table["status"], "acked"), False), pc.is_in(place, value_set=wanted))
        return table.filter(pc.fill_null(keep, False)).select(["key", "seq", "partition", "offset"])

    if path.is_dir():
        found = [
            at_places(table)
            for place in ack_folders(path)
            for table, _ in read_ahead(each_segment(place))
            if table is not None
        ]
    else:
        found = [at_places(read_acks(path, []))]
    return pa.concat_tables(found, promote_options="default").to_pandas() if found else pd.DataFrame()


def _selected_lines(table: pa.Table, selection: Selection | None) -> pa.Table:
    """The acknowledgement lines of the selected records (all without a selection)."""
    return table if selection is None or not table.num_rows else selection.rows(table)


def _ack_segments(folder: Path, gaps: list[str], selection: Selection | None) -> pa.Table:
    tables = []
    for place in ack_folders(folder):  # the canaries' and a single generator's segments, then each worker's
        for table, problem in read_ahead(each_segment(place)):
            gaps += [f"{place.relative_to(folder.parent)}/{problem}"] if problem else []
            tables += [_selected_lines(table, selection)] if table is not None else []
    if not tables:
        return pa.table({name: pa.array([], kind) for name, kind in ACK_TYPES.items()})
    table = pa.concat_tables(tables, promote_options="default")
    missing = {"key", "seq", "status", "partition", "offset"} - set(table.column_names)
    if missing:
        raise EvidenceError(f"{folder}: not an acknowledgement log (no column {', '.join(sorted(missing))})")
    return table


def _with_torn_record(table: pa.Table, torn: list[bytes], gaps: list[str]) -> pa.Table:
    """A cut last line still names a record that was sent, when its key and seq survived the cut: that
    record's outcome is unknown (it may or may not have been written), not a phantom if it shows up."""
    fields = torn[0].decode("utf-8", "replace").split(",") if torn else []
    if len(fields) < 3 or not fields[0] or not INTEGER.fullmatch(fields[1]):  # the seq must be whole: a comma after it
        return table
    row = {name: [None] for name in table.column_names}
    row |= {"key": [fields[0]], "seq": [int(fields[1])], "status": ["unknown"]}
    gaps.append(f"acks.csv: the cut line's record ({fields[0]}, {fields[1]}) counted as sent with an unknown outcome")
    return pa.concat_tables([table, pa.table(row, schema=table.schema)])


def _typed_acks(table: pa.Table, damaged: list[str]) -> pa.Table:
    """Text columns -> the ack log's types; a number that is not one nulls its line's value and names the line.
    seq stays text where it is not an integer: it is still that record's identity."""
    columns = {}
    for name in table.column_names:
        column = table[name].combine_chunks()
        kind = ACK_TYPES.get(name, pa.string())
        if name == "seq" or kind == pa.string():
            columns[name] = column
            continue
        valid = pc.fill_null(pc.match_substring_regex(column, r"^-?[0-9]{1,18}$"), False)
        bad = pc.and_(pc.invert(valid), pc.not_equal(pc.utf8_length(column), 0)).to_numpy(zero_copy_only=False)
        damaged += [f"line {i + 2} ({name})" for i in np.flatnonzero(bad)[:5]]
        columns[name] = pc.if_else(valid, column, pa.scalar(None, pa.string())).cast(kind)
    return pa.table(columns)


def read_sent(table: pa.Table, ids: RecordIds, gaps: list[str], name: str = "acks.csv") -> pd.DataFrame:
    """One row per record sent. A record with several lines (acked twice, acked and unknown) counts once:
    acknowledged if any line says so, at that line's partition and offset. Its lines `aborted` (written in
    a transaction the generator aborted, then sent again) are its `aborted_copies` on the source topic, its
    acknowledged lines `resend` (sent again on purpose: the resend fault) its `resent_copies` there."""
    rid, codes = ids.identify(table["key"].combine_chunks(), table["seq"].combine_chunks())
    frame = pd.DataFrame(
        {
            "rid": rid,
            "key": codes.astype(np.int32),
            "event_time_ms": table["event_time_ms"].fill_null(0).to_numpy(zero_copy_only=False)
            if "event_time_ms" in table.column_names
            else 0,
            "late": table["late"].fill_null(0).to_numpy(zero_copy_only=False).astype(bool)
            if "late" in table.column_names
            else False,
            "acked": pc.fill_null(pc.equal(table["status"], "acked"), False).to_numpy(zero_copy_only=False),
            "partition": table["partition"].fill_null(-1).to_numpy(zero_copy_only=False),
            "offset": table["offset"].fill_null(-1).to_numpy(zero_copy_only=False),
        }
    )
    frame["resend"] = (
        table["resend"].fill_null(0).to_numpy(zero_copy_only=False).astype(bool)
        if "resend" in table.column_names
        else False
    )
    frame = _aborted_lines(
        frame, pc.fill_null(pc.equal(table["status"], "aborted"), False).to_numpy(zero_copy_only=False)
    )
    resend = frame.resend.to_numpy()
    resent = frame.rid[resend & frame.acked.to_numpy()].value_counts()
    originals = frame.rid[~resend] if resend.any() else frame.rid  # a resend's line is not a repeated line
    repeated = more_than_once(originals)
    if repeated.any() or resend.any():  # acknowledged if any of its lines says so, at its first send's place
        frame = frame.sort_values(["rid", "acked", "resend"], ascending=[True, False, True], kind="stable")
        frame = frame.drop_duplicates("rid").sort_index(ignore_index=True)
    frame = frame.drop(columns="resend")
    frame["resent_copies"] = frame.rid.map(resent).fillna(0).astype(np.int64).to_numpy() if len(resent) else 0
    if repeated.any():
        records = originals[repeated].nunique()
        gaps.append(
            f"{name}: {records} record(s) have more than one line ({int(repeated.sum())} lines); each counted once, "
            "acknowledged if any of its lines says so"
        )
    placeless = int((frame.acked.to_numpy() & (frame.offset.to_numpy() < 0)).sum())
    if placeless:
        gaps.append(
            f"{name}: {placeless} record(s) acknowledged without an offset (the producer's delivery report gave "
            "none): each is placed only between the offsets acknowledged before and after it in its partition"
        )
    return frame


def _aborted_lines(frame: pd.DataFrame, aborted: np.ndarray) -> pd.DataFrame:
    """Fold the aborted lines into a count per record; a record with nothing but aborted lines (its resend never
    went out) stays, once, as sent without an acknowledgement."""
    if not aborted.any():
        return frame.assign(aborted_copies=np.zeros(len(frame), np.int64))
    copies = frame.rid[aborted].value_counts()
    other = frame.rid[~aborted]
    alone = aborted & ~isin(frame.rid, other)
    kept = frame[~aborted | (alone & ~frame.rid.duplicated().to_numpy())]
    return kept.assign(aborted_copies=kept.rid.map(copies).fillna(0).astype(np.int64).to_numpy())


def record_frame(table: pa.Table, ids: RecordIds) -> pd.DataFrame:
    """Arrow columns -> pandas: rid from key and seq, the other columns as they are."""
    frame = {"rid": ids.of_rows(table)}
    for name in table.column_names:
        if name not in ("key", "seq"):
            frame[name] = table[name].to_numpy(zero_copy_only=False)
    return pd.DataFrame(frame)


def batch_columns(frame: F, batches: pa.Array) -> F:
    """Add to `frame` (a frame, or a dict of columns) one `batch.<streamlet>` column per streamlet a record passed (its
    batch id there, -1 if none).

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


def _topic_frame(columns: dict, batches: pa.Array | None, ids: RecordIds) -> pd.DataFrame:
    frame = record_frame(pa.table(columns), ids)
    return batch_columns(frame, batches) if batches is not None else frame


def carries_header(table: pa.Table, header: str) -> np.ndarray:
    """Per row of a columnar recording (harness/evidence/topics.py): does the record carry `header`?"""
    if "headers" not in table.column_names:
        return np.zeros(table.num_rows, bool)
    return pc.is_valid(pc.map_lookup(table["headers"], pa.scalar(header), "first")).to_numpy(zero_copy_only=False)


def _has_header(batch: pa.RecordBatch, header: str) -> pa.Array:
    """Per record: does it carry `header` (the dump's "headers" object, absent where a record has none)?"""
    names = batch.schema.names
    headers = batch.column(names.index("headers")) if "headers" in names else None
    if headers is None or header not in {headers.type.field(i).name for i in range(headers.type.num_fields)}:
        return pa.array(np.zeros(batch.num_rows, bool))
    return pc.is_valid(pc.struct_field(headers, header))


def _topic_batch(batch: pa.RecordBatch, ids: RecordIds, header: str | None) -> pd.DataFrame:
    value = batch.column("value")
    names = {value.type.field(i).name for i in range(value.type.num_fields)}

    def field(name):
        return pc.struct_field(value, name) if name in names else pa.nulls(len(value), pa.int64())

    columns = {
        "key": field("key"),
        "seq": field("seq"),
        "partition": batch.column("partition"),
        "offset": batch.column("offset"),
        "timestamp_ms": batch.column("timestamp_ms"),
    }
    if "count" in names:
        columns["count"] = field("count").cast(pa.int64())
    if header:
        columns["has_header"] = _has_header(batch, header)
    return _topic_frame(columns, pc.struct_field(value, "batches") if "batches" in names else None, ids)


def _topic_lines(data: pa.Buffer, name: str, ids: RecordIds, gaps: list[str], header: str | None) -> pd.DataFrame:
    """The slow, forgiving reader, for a dump Arrow cannot read whole: line by line, damaged lines named and skipped,
    values of any type kept (a seq that is not an integer is still that record's identity)."""
    rows, bad = [], []
    for number, line in enumerate(data.to_pybytes().split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            value = row["value"]
            rows.append(
                (
                    int(row["partition"]),
                    int(row["offset"]),
                    int(row.get("timestamp_ms") or 0),
                    value.get("key"),
                    value.get("seq"),
                    value.get("count"),
                    json.dumps(value.get("batches") or {}),
                    header in (row.get("headers") or {}),
                )
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            bad.append(number)
    if bad:
        gaps.append(
            f"{name}: {len(bad)} damaged line(s) skipped (line "
            f"{', '.join(map(str, bad[:5]))}{', ...' if len(bad) > 5 else ''})"
        )
    partition, offset, timestamp, key, seq, count, batches, has_header = (
        (list(c) for c in zip(*rows)) if rows else ([],) * 8
    )

    def text(values) -> pa.Array:
        return pa.array([v if v is None or isinstance(v, str) else json.dumps(v) for v in values], pa.string())

    columns = {
        "key": text(key),
        "seq": text(seq),
        "partition": pa.array(partition, pa.int32()),
        "offset": pa.array(offset, pa.int64()),
        "timestamp_ms": pa.array(timestamp, pa.int64()),
    }
    if any(c is not None for c in count):
        columns["count"] = pa.array([c if isinstance(c, int) else None for c in count], pa.int64())
    if header:
        columns["has_header"] = pa.array(has_header, pa.bool_())
    return _topic_frame(columns, pa.array(batches, pa.string()), ids)


def read_topic_dump(
    path: Path, ids: RecordIds, gaps: list[str], header: str | None = None, selection: Selection | None = None
) -> pd.DataFrame:
    """topics/<topic>.jsonl -> rid, partition, offset, timestamp_ms, batch.<streamlet>... in partition/offset order;
    window-count topics have no seq and keep their count; with `header`, has_header (the record carries it). Read as a
    stream of blocks: only these columns stay in memory."""
    name = f"topics/{path.name}"
    data = _whole_lines(path, gaps, name)
    if data.size == 0:
        return pd.DataFrame({c: pd.Series(dtype="int64") for c in ("rid", "partition", "offset", "timestamp_ms")})
    try:
        with pajson.open_json(pa.BufferReader(data), read_options=pajson.ReadOptions(block_size=16 << 20)) as reader:
            frames = [_topic_batch(batch, ids, header) for batch in reader]
        frame = concat(frames, {})
        del frames
    except (pa.ArrowException, KeyError):  # a value Arrow cannot type (a key that is an object, a seq type change, ...)
        frame = _topic_lines(data, name, ids, gaps, header)
    frame = fill_batches(selected(selection, frame))
    return frame.sort_values(["partition", "offset"], kind="stable", ignore_index=True)  # delivery order, once


def read_topic_segments(
    folder: Path, ids: RecordIds, gaps: list[str], header: str | None = None, selection: Selection | None = None
) -> pd.DataFrame:
    """topics/<topic>/ (columnar, harness/evidence/topics.py) -> the frame read_topic_dump gives for the same records.
    A folder without segments is a topic nothing was written to; a segment cut mid-batch keeps its whole batches."""

    def columns(table: pa.Table) -> dict[str, np.ndarray]:
        names = table.column_names
        out = {"rid": ids.of_rows(table)}
        for name in ("partition", "offset", "timestamp_ms", "count"):
            if name in names:
                out[name] = table[name].to_numpy()
        if header:
            out["has_header"] = carries_header(table, header)
        for name in names:
            if name.startswith(BATCH_PREFIX):
                out[name] = table[name].fill_null(-1).to_numpy()
        return out

    pieces = segment_columns(folder, columns, gaps, f"topics/{folder.name}/", selection)
    if not pieces:
        return pd.DataFrame({c: pd.Series(dtype="int64") for c in ("rid", "partition", "offset", "timestamp_ms")})
    stacked = stack(pieces)
    order = np.lexsort((stacked["offset"], stacked["partition"]))  # stable: a place's copies keep their order
    for name in stacked:  # a column at a time, each replaced as it is taken: one column's copy at a time
        stacked[name] = stacked[name][order]
    return fill_batches(pd.DataFrame(stacked, copy=False))


def segment_columns(
    folder: Path,
    columns: Callable[[pa.Table], dict[str, np.ndarray]],
    gaps: list[str],
    where: str,
    selection: Selection | None = None,
) -> list[dict[str, np.ndarray]]:
    """`columns` of each segment of `folder`, read and converted one segment at a time (what could not be read is a
    gap, named from `where`); with a `selection`, only its records' rows (chosen before the rest is converted)."""
    pieces = []
    for table, problem in read_ahead(each_segment(folder)):
        if problem:
            gaps.append(where + problem)
        if table is not None and table.num_rows:
            # Each column in memory of its own, not a view of the segment's: Arrow's allocator keeps what it frees
            # for its next segment rather than giving it back, so views would hold every segment's buffers at once.
            converted = columns(table if selection is None else selection.rows(table))
            pieces.append({name: np.require(a, requirements="O") for name, a in converted.items()})
    pa.default_memory_pool().release_unused()
    return pieces


def stack(pieces: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Pieces of the same columns (a segment's each) as one array per column, made a column at a time and each
    piece's column let go as it is copied: the peak is the pieces and one column, not the pieces twice. A column a
    piece lacks is -1 there for a batch stamp (a streamlet its records did not pass), else NaN (as pandas' concat)."""
    names = list(dict.fromkeys(name for piece in pieces for name in piece))
    sizes = [len(next(iter(piece.values()))) for piece in pieces]
    out = {}
    for name in names:
        missing = -1 if name.startswith(BATCH_PREFIX) else np.nan
        parts = [piece.pop(name) if name in piece else np.full(n, missing) for piece, n in zip(pieces, sizes)]
        out[name] = parts[0] if len(parts) == 1 else np.concatenate(parts)
        del parts
    return out


def read_dropped(layout: RunLayout, streamlets, ids: RecordIds, gaps: list[str]) -> dict[str, np.ndarray]:
    """The records each streamlet declared it dropped by design (dropped/<streamlet>.jsonl; none without the file)."""
    found = {}
    for s in streamlets:
        events = json_lines(layout.dropped(s.name), f"dropped/{s.name}.jsonl", gaps, ("key", "seq"))
        if events:
            found[s.name] = np.unique(rids_of(events, ids))
    return found


def rids_of(events: list[dict], ids: RecordIds) -> np.ndarray:
    """rid per JSON object with key and seq (values of any type, as written)."""
    text = [[None if e[f] is None else str(e[f]) for e in events] for f in ("key", "seq")]
    return ids.ids(pa.array(text[0], pa.string()), pa.array(text[1], pa.string()))


def concat(frames: list[pd.DataFrame], empty: dict[str, str]) -> pd.DataFrame:
    if not frames:
        return pd.DataFrame({c: pd.Series(dtype=t) for c, t in empty.items()})
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]


def fill_batches(frame: pd.DataFrame) -> pd.DataFrame:
    """Batch columns missing from some blocks (a streamlet a record did not pass) -> -1; then
    the small integers (key codes, partitions, batch ids) narrowed to int32: memory per record."""
    columns = [c for c in frame.columns if c.startswith("batch.")]
    frame[columns] = frame[columns].fillna(-1)
    narrow = {c: np.int32 for c in frame.columns if c in ("key", "partition", "batch_id") or c.startswith("batch.")}
    return frame.astype(narrow, copy=False)
