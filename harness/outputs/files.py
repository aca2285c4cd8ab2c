"""A file output: a table of Parquet files an application writes through Spark in a format of its kind (Delta Lake,
Spark's Parquet file sink: harness/outputs/kinds/), in a folder of the run's own (work/<output>/table) that the job
is given as ${path.OUTPUT}.

The harness reads it without Spark, after the drivers stopped: the state is the rows of the files the format's log
has committed (what a reader of the table sees); the deliveries are the rows of every data file
on disk, committed or not, since a batch killed between writing its files and committing them leaves them, and its
replay writes them again (Spark's file sink, Delta's streaming sink and a foreachBatch writer with txnAppId and
txnVersion skip a batch already committed; a plain foreachBatch append commits it twice). Both go into the run
directory as the egress store's contract tables (egress/<output>.sqlite). A data file cut by a kill (no footer) is
named, its rows uncounted: the output is then observed only in part.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Callable, NamedTuple

from contract.applications import APPEND, FILE_OUTPUT, UNREAD, WINDOW_MODES
from contract.egress import AUDIT, MAIN_QUERY, RECORDS, STATE, WINDOW_AUDIT, WINDOW_STATE, WINDOWS
from contract.identity import IdentityReader
from contract.table_files import data_files, finished, read_rows
from harness.errors import HarnessError
from harness.evidence.intervals import interval_ms
from harness.field import Field
from harness.outputs.event_windows import interval, window_spans
from harness.outputs.kind import IDENTITY, RECEIVES, WRITTEN_BY, OutputKind, OutputSpec, Placeholder
from harness.outputs.tables import identity_text, record_export

if TYPE_CHECKING:
    from harness.outputs.run import OutputRun
    from pipelines.audit import ExportedEvidence


FIELDS = (  # a file output's, in a scenario
    Field("format", str, None, "the table's format: delta, iceberg or parquet", required=True),
    IDENTITY,
    WRITTEN_BY,
    RECEIVES,
    Field("window", dict, None, "a windowed count's rows (outputs.NAME.window)"),
    Field("catalog_table", str, None, "the name the job gives it in its catalog (toTable): [DB.]TABLE, no path"),
)
CATALOG_NAME = re.compile(r"(?:([A-Za-z_][A-Za-z0-9_]*)\.)?([A-Za-z_][A-Za-z0-9_]*)")
WINDOW = (  # a windowed count's, at outputs.NAME.window
    Field("size", str, None, "the window's length, like '10 seconds'", required=True),
    Field("slide", str, None, "how far it slides (by default its size: tumbling)"),
    Field("watermark", str, None, "the delay of the job's withWatermark", required=True),
    Field("time", str, None, "the record field it windows on (an event_time field of workload.record)"),
    Field("key", str, None, "the column holding the key", required=True),
    Field("start", str, None, "the column holding the window's start", required=True),
    Field("count", str, None, "the column holding the count", required=True),
    Field("mode", str, APPEND, "the job's output mode", choices=WINDOW_MODES),
)
PATH = Placeholder(
    "path", "the folder of the file output NAME (the table the job writes there)", "file output", "file outputs"
)


def parse_files(spec: OutputSpec) -> dict:
    """A file output's settings: its `format`, where its rows' `identity` is read (none for a windowed count's rows,
    which carry a key), the application writing it, what it `receives`, the `window` of a windowed count."""
    window = _window(spec)
    named = spec.values["catalog_table"]
    if named is not None and spec.values["format"] == "iceberg":
        why = "an Iceberg table is named in its own catalog, whose warehouse is ${path.NAME}"
        raise spec.error("catalog_table", why)
    if named is not None and not CATALOG_NAME.fullmatch(named):
        raise spec.error("catalog_table", f"expected a table's name in the session catalog, [DB.]TABLE, got {named!r}")
    return {
        "format": spec.values["format"],
        "catalog_table": named,
        "identity": None if window else spec.identity(),
        "written_by": spec.writer(),
        "receives": spec.receives(),
        "window": window,
    }


def offers_path(name: str, raw: dict) -> dict[str, str]:
    """${path.NAME}: the output's own name."""
    return {PATH.prefix: name}


def evidence(settings: dict) -> str:
    """A windowed count's rows go into the contract's window tables, records into its record tables."""
    return WINDOWS if settings["window"] else RECORDS


def _window(spec: OutputSpec) -> dict | None:
    """A windowed count the job writes: each row a key's count of records in an event-time window (its length
    `size`, sliding by `slide`), the key, the window's start and the count in the named columns; `mode` as the
    job's output mode (append: each window once, after the watermark passed it; update: a row per change, the
    last one counts); `watermark` the delay of the job's withWatermark, `time` the record field it windows on."""
    f = spec.nested("window", WINDOW)
    if f is None:
        return None
    size, slide, time_field = window_spans(spec, "window", f)
    return {
        "size": size,
        "slide": slide,
        "watermark": interval(spec, "window.watermark", f["watermark"]),
        "time": time_field,
        "key": f["key"],
        "start": f["start"],
        "count": f["count"],
        "mode": f["mode"],
    }


class Written(NamedTuple):
    """A data file's rows as written: the batch that committed it (None: uncommitted), when it was written (epoch
    ms), its rows, the positions of those a table's deletion vectors mark deleted since, whether they are
    deliveries (a compaction's rewrite holds rows delivered in the files it replaced: in the state, no delivery),
    the positions of rows copied from the files a rewrite replaced (no delivery either), and whether they are in the
    state (a change data feed's rows are deliveries only: the data files hold the state)."""

    batch: int | None
    written_ms: int
    rows: list[dict]
    deleted: frozenset[int] = frozenset()
    delivered: bool = True
    copied: frozenset[int] = frozenset()
    kept: bool = True


@dataclass(frozen=True)
class Rewrites:
    """What the commits that rewrote rows delivered (a MERGE, UPDATE or DELETE copying the other rows of the files
    it replaced): of each file such a commit added, the positions of its rows copied from the files it replaced, or
    the whole file where the commit's change data feed lists its changes (`replaced`), those changes (inserted and
    updated rows: `changes`, deliveries not in the state), and what the format could not tell (`doubt`: an update
    that wrote the values a row had looks like a copy where no change data feed lists it; None: nothing)."""

    copies: dict[str, frozenset[int]] = field(default_factory=dict)
    replaced: frozenset[str] = frozenset()
    changes: tuple[Written, ...] = ()
    doubt: str | None = None


@dataclass(frozen=True)
class Committed:
    """What a format's log has committed: data file name -> the batch that committed it, the positions of the
    rows a committed file holds no longer (deletion vectors: a reader skips them), and the files a compaction wrote
    (rows of the files it replaced, rewritten: no new deliveries)."""

    batches: dict[str, int]
    deleted: dict[str, frozenset[int]] = field(default_factory=dict)
    rewritten: frozenset[str] = frozenset()


def copied_rows(replaced: list[list[dict]], added: dict[str, list[dict]]) -> dict[str, frozenset[int]]:
    """Of each file a rewrite added (name -> its rows), the positions of its rows equal in every column to a row of
    the files it `replaced` (each of those rows taken once): the rows it copied."""
    before = Counter(_content(row) for rows in replaced for row in rows)
    copies = {}
    for name, rows in added.items():
        positions = []
        for position, row in enumerate(rows):
            if before[_content(row)] > 0:
                before[_content(row)] -= 1
                positions.append(position)
        copies[name] = frozenset(positions)
    return copies


def _content(row: dict) -> str:
    return json.dumps(row, sort_keys=True, default=str)


class UnreadTable(HarnessError):
    """A table its format's reader cannot read as a reader of the table would (a feature it does not implement, a
    damaged file): none of it is counted."""


def record_tables(identity: dict, written: list[tuple]) -> dict[str, list[tuple]]:
    """The contract's egress tables of an output's records, from what was written (each a Written, or a tuple of
    its first three fields). Every row is a delivery, each committed row not deleted since in the state, by its
    identity (`identity`, read from the row). A kind of one's own exports with it too."""
    read = IdentityReader(identity)
    deliveries, state = [], []
    for batch, written_ms, rows, deleted, delivered, copied, kept in (Written(*entry) for entry in written):
        for position, row in enumerate(rows):
            key, seq = (identity_text(part) for part in read({"value": row}))
            if delivered and position not in copied:
                deliveries.append(
                    (MAIN_QUERY, -1 if batch is None else batch, key, seq, -1, "{}", None, -1, -1, written_ms)
                )
            if kept and batch is not None and position not in deleted:
                state.append((key, seq, -1, None, batch, "{}", written_ms))
    return {AUDIT: deliveries, STATE: state}


@dataclass(frozen=True)
class TableFormat:
    """How a format commits its data files, each function given the output's folder: what it has committed, when it
    last committed, and every data file on disk."""

    name: str  # the output's `format`
    committed: Callable[[Path], Committed]  # raises UnreadTable where the table cannot be read as its readers do
    latest_ms: Callable[[Path], int]  # when its log last took a commit (0: none yet)
    data_files: Callable[[Path], list[Path]] = data_files  # every data file on disk, committed or not
    rewrites: Callable[[Path], Rewrites] = lambda folder: Rewrites()  # what its rewrites of rows delivered


def file_kind(
    name: str, help: str, table_format: TableFormat, jar_sets: dict[str, dict[str, str | None]] | None = None
) -> OutputKind:
    """The output kind of a table of files in `table_format` (`format: <its name>`), its Sink a FileSink."""
    return OutputKind(
        name,
        FILE_OUTPUT,
        help,
        marker="format",
        fields=FIELDS,
        parse=parse_files,
        evidence=evidence,
        sink=lambda run, output, settings: FileSink(run, output, settings, table_format),
        placeholders=(PATH,),
        offers=offers_path,
        variant=("format", table_format.name),
        jar_sets=jar_sets or {},
    )


def newest_entry_ms(log: Path) -> int:
    """When the newest numbered entry of a log folder (`00012.json`, `12.compact`) was written; 0 with none."""
    try:
        entries = [e for e in os.scandir(log) if e.name.split(".")[0].isdigit()]
    except OSError:  # no log yet
        return 0
    return max((e.stat().st_mtime_ns // 1_000_000 for e in entries), default=0)


@dataclass(frozen=True)
class FileOutput:
    """An output table of data files in `folder`, committed through its format's log: records, or a windowed
    count's rows (`window`, harness/scenario/applications.py)."""

    folder: Path
    format: TableFormat
    identity: dict | None
    window: dict | None = None

    def committed(self) -> Committed:
        return self.format.committed(self.folder)

    def rows(self) -> list[dict]:
        """The committed rows now, each as {"value": row} (how identities are read); a log being written, a file
        not readable yet: what could be read."""
        try:
            committed = self.committed()
        except (OSError, ValueError, HarnessError):  # a log entry being written, a table not read as it is
            return []
        found = []
        for path in self.format.data_files(self.folder) if self.folder.is_dir() else []:
            if path.name in committed.batches:
                deleted = committed.deleted.get(path.name, ())
                rows = read_rows(self.folder, path) or ()
                found.extend({"value": row} for i, row in enumerate(rows) if i not in deleted)
        return found

    def export(self, evidence: ExportedEvidence, vanished: bool = False) -> dict:
        """Copy the committed rows (state) and every data file's rows (deliveries) into the run directory's
        evidence, as the contract's tables (records, or windows); returns what was exported and the files that could
        not be read. UnreadTable, nothing written, where the table cannot be read as its readers read it. Where
        data files `vanished` from disk during the run (a VACUUM after a compaction), a compaction's rewrite is
        the only trace of the rows it holds: its rows count as deliveries too."""
        committed = self.committed() if self.folder.is_dir() else Committed({})
        if vanished:
            committed = replace(committed, rewritten=frozenset())
        rewrites = self.format.rewrites(self.folder) if self.folder.is_dir() else Rewrites()
        files = self.format.data_files(self.folder) if self.folder.is_dir() else []
        written, cut = [], []
        for path in files:
            rows = read_rows(self.folder, path)
            if rows is None:
                cut.append(path.name)
            else:
                batch = committed.batches.get(path.name)
                ms = os.stat(path).st_mtime_ns // 1_000_000
                deleted = committed.deleted.get(path.name, frozenset())
                delivered = path.name not in committed.rewritten and path.name not in rewrites.replaced
                written.append(
                    Written(batch, ms, rows, deleted, delivered, rewrites.copies.get(path.name, frozenset()))
                )
        written += rewrites.changes
        tables = self._window_tables(written) if self.window else record_tables(self.identity, written)
        evidence.write(tables)
        deliveries, state = tables.values()  # each kind's deliveries table, then its state table
        return {
            "rows": len(state),
            "deliveries": len(deliveries),
            "files": len(files),
            "uncommitted_files": sum(1 for p in files if p.name not in committed.batches),
            "deleted_rows": sum(len(d) for d in committed.deleted.values()),
            "rewritten_files": sum(1 for p in files if p.name in committed.rewritten),
            "copied_rows": sum(len(c) for c in rewrites.copies.values()),
            "changed_rows": sum(len(w.rows) for w in rewrites.changes),
            "cut_files": cut,
            "doubt": rewrites.doubt,
        }

    def _window_tables(self, written: list[Written]) -> dict[str, list[tuple]]:
        """Every window row a delivery; the state per (key, window) is what a reader of the table makes of its
        committed rows: their counts summed in append mode (a window appended twice counts twice), the last one
        in update mode."""
        w, size = self.window, interval_ms(self.window["size"])
        deliveries, state = [], {}
        for batch, written_ms, rows, deleted, delivered, copied, kept in written:
            for position, row in enumerate(rows):
                key, start, count = _at(row, w["key"]), _epoch_ms(_at(row, w["start"])), _at(row, w["count"])
                end = None if start is None else start + size
                if delivered and position not in copied:
                    deliveries.append(
                        (-1 if batch is None else batch, key, start, end, count, "{}", None, -1, -1, written_ms)
                    )
                if not kept or batch is None or position in deleted:
                    continue
                before = state.get((key, start))
                if before is not None and w["mode"] == APPEND:
                    count = (before[3] or 0) + (count or 0)
                state[(key, start)] = (key, start, end, count, batch, written_ms)
        return {WINDOW_AUDIT: deliveries, WINDOW_STATE: list(state.values())}


def _at(row: dict, path: str):
    """A column of a row, or a field of a struct column ("window.start")."""
    node = row
    for part in path.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def _epoch_ms(value) -> int | None:
    """A window's start as epoch milliseconds: a timestamp (one without a zone is UTC, as Spark writes it), epoch
    milliseconds, or ISO text."""
    if isinstance(value, datetime):
        aware = value if value.tzinfo else value.replace(tzinfo=timezone.utc)
        return round(aware.timestamp() * 1000)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, str):
        try:
            return _epoch_ms(datetime.fromisoformat(value.replace("Z", "+00:00")))
        except ValueError:
            return None
    return None


class FileProbe:
    """When the job last committed to a file output: its log's newest entry (an in-flight kill waits for one newer
    than the batch's plan). A kill then lands after the table took the batch and before the checkpoint did, the
    moment that tells a writer that skips a replayed batch from one that appends it again. Its deliveries so far:
    the rows of every data file written to its end, each file's footer read once."""

    def __init__(self, output: FileOutput):
        self.output = output
        self._rows: dict[Path, int] = {}  # a finished data file -> its rows (a file is never changed once written)

    def latest_ms(self) -> int:
        return self.output.format.latest_ms(self.output.folder)

    def delivered(self) -> int | None:
        """Rows in the data files written so far, committed or not (the deliveries the export will count, and a
        compaction's rewrites, which it does not); None when the folder could not be listed this time."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            files = self.output.format.data_files(self.output.folder) if self.output.folder.is_dir() else []
        except OSError:  # a file removed while listed (a vacuum, a job's own clean-up)
            return None
        for path in files:
            if path not in self._rows and finished(path):
                try:
                    self._rows[path] = pq.read_metadata(path).num_rows
                except (pa.ArrowInvalid, OSError):  # still being written: its footer is read next time
                    continue
        return sum(self._rows.values())

    def removed(self) -> dict[Path, int]:
        """The data files it saw written to their end that are no longer on disk (removed while the run went on:
        VACUUM, remove_orphan_files, expire_snapshots), each with its rows."""
        return {path: rows for path, rows in self._rows.items() if not path.exists()}

    def close(self) -> None:
        pass  # holds nothing open


def file_output_folder(run: OutputRun, name: str, settings: dict) -> Path:
    """The table's folder: the output's own (${path.NAME}), or where the writer's Spark keeps a managed table of
    the name the job gives it in its session catalog (its warehouse: DB.db/TABLE, or TABLE in the default one)."""
    named = settings.get("catalog_table")
    if named is None:
        return run.layout.workdir(name) / "table"
    db, table = CATALOG_NAME.fullmatch(named).groups()
    warehouse = run.layout.warehouse(settings["written_by"])
    if db and db.lower() != "default":
        warehouse = warehouse / f"{db.lower()}.db"
    return warehouse / table.lower()


REMOVED = (
    "{:,} data file(s) seen written while the job ran were removed from disk before the export (VACUUM, "
    "remove_orphan_files, expire_snapshots): their rows are not counted as deliveries, a compaction's rewrites of "
    "them counted in their place"
)


class FileSink:
    """A file output in a run (a Sink, harness/outputs/kind.py): nothing to prepare (the job creates its table),
    exported from its files after the drivers stopped."""

    def __init__(self, run: OutputRun, name: str, settings: dict, table_format: TableFormat):
        self.run, self.name = run, name
        folder = file_output_folder(run, name, settings)
        self.output = FileOutput(folder, table_format, settings["identity"], settings["window"])
        self._probe = FileProbe(self.output)  # one for the run: the files it saw are known at the export

    def prepare(self) -> None:
        return None

    def placeholders(self) -> dict[str, str]:
        return {f"path.{self.name}": str(self.output.folder)}

    def reader(self) -> tuple[dict, Callable[[], list[dict]]] | None:
        if self.output.window:  # a window's count is no record's copy
            return None
        return self.output.identity, self.output.rows

    def probe(self) -> FileProbe:
        return self._probe

    def export(self) -> dict:
        from pipelines.audit import ExportedEvidence  # here: its Arrow and NumPy only where a run exports

        self._probe.delivered()  # the files written since it last looked
        removed = self._probe.removed()
        try:
            exported = self.output.export(ExportedEvidence.of(self.run.driver_paths(self.name)), bool(removed))
        except UnreadTable as exc:  # nothing exported: the checker finds no evidence of the output, and says why
            record_export(self.run, self.name, {}, str(exc), observed=UNREAD, format=self.output.format.name)
            return {}
        exported |= {"removed_files": sorted(p.name for p in removed), "removed_rows": sum(removed.values())}
        cut, doubt = exported["cut_files"], exported.pop("doubt")
        unobserved = []  # what the export could not see, each said once
        if cut:
            unobserved.append(
                f"{len(cut)} data file(s) cut by a kill, unreadable: their rows are not counted as deliveries"
            )
        if doubt:
            unobserved.append(doubt)
        if removed:
            unobserved.append(REMOVED.format(len(removed)))
        record_export(self.run, self.name, exported, "; ".join(unobserved) or None, format=self.output.format.name)
        return exported
