"""A file output: a table of Parquet files an application writes through Spark, with Spark's file sink (format
parquet, its `_spark_metadata` log) or Delta Lake (format delta, its `_delta_log`), in a folder of the run's own
(work/<output>/table) that the job is given as ${path.OUTPUT}.

The harness reads it without Spark (contract/table_files.py), after the drivers stopped: the state is the rows of
the files the log has committed (what a reader of the table sees); the deliveries are the rows of every data file
on disk, committed or not, since a batch killed between writing its files and committing them leaves them, and its
replay writes them again (Spark's file sink, Delta's streaming sink and a foreachBatch writer with txnAppId and
txnVersion skip a batch already committed; a plain foreachBatch append commits it twice). Both go into the run
directory as the egress store's contract tables (egress/<output>.sqlite). A data file cut by a kill (no footer) is
named, its rows uncounted: the output is then observed only in part.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from contract.applications import APPEND, DELTA, FILE_OUTPUT
from contract.egress import AUDIT, MAIN_QUERY, STATE, WINDOW_AUDIT, WINDOW_STATE
from contract.identity import IdentityReader
from contract.table_files import (
    DELTA_LOG,
    SPARK_LOG,
    data_files,
    delta_live_files,
    read_rows,
    spark_committed_files,
)
from harness.evidence.watermark import interval_ms
from harness.runner.table_outputs import identity_text, record_export, written_by
from pipelines.audit import ExportedEvidence

if TYPE_CHECKING:
    from harness.runner.run_parts import OutputRun


@dataclass(frozen=True)
class FileOutput:
    """An output table of data files in `folder`, committed through its format's log: records, or a windowed
    count's rows (`window`, harness/scenario/applications.py)."""

    folder: Path
    format: str  # delta or parquet
    identity: dict | None
    window: dict | None = None

    def committed(self) -> dict[str, int]:
        """Data file name -> the batch that committed it."""
        if self.format == DELTA:
            return delta_live_files(self.folder)
        return spark_committed_files(self.folder)

    def rows(self) -> list[dict]:
        """The committed rows now, each as {"value": row} (how identities are read); a log being written, a file
        not readable yet: what could be read."""
        try:
            committed = self.committed()
        except (OSError, ValueError):  # a log entry being written
            return []
        found = []
        for path in data_files(self.folder) if self.folder.is_dir() else []:
            if path.name in committed:
                found.extend({"value": row} for row in read_rows(self.folder, path) or ())
        return found

    def export(self, evidence: ExportedEvidence) -> dict:
        """Copy the committed rows (state) and every data file's rows (deliveries) into the run directory's
        evidence, as the contract's tables (records, or windows); returns what was exported and the files that could
        not be read."""
        committed = self.committed() if self.folder.is_dir() else {}
        files = data_files(self.folder) if self.folder.is_dir() else []
        written, cut = [], []
        for path in files:
            rows = read_rows(self.folder, path)
            if rows is None:
                cut.append(path.name)
            else:
                written.append((path, committed.get(path.name), os.stat(path).st_mtime_ns // 1_000_000, rows))
        tables = self._window_tables(written) if self.window else self._record_tables(written)
        evidence.write(tables)
        deliveries, state = tables.values()  # each kind's deliveries table, then its state table
        return {
            "rows": len(state),
            "deliveries": len(deliveries),
            "files": len(files),
            "uncommitted_files": sum(1 for p in files if p.name not in committed),
            "cut_files": cut,
        }

    def _record_tables(self, written: list[tuple]) -> dict[str, list[tuple]]:
        """Every row a delivery, each committed row in the state, by its identity."""
        read = IdentityReader(self.identity)
        deliveries, state = [], []
        for _, batch, written_ms, rows in written:
            for row in rows:
                key, seq = (identity_text(part) for part in read({"value": row}))
                deliveries.append(
                    (MAIN_QUERY, -1 if batch is None else batch, key, seq, -1, "{}", None, -1, -1, written_ms)
                )
                if batch is not None:
                    state.append((key, seq, -1, None, batch, "{}", written_ms))
        return {AUDIT: deliveries, STATE: state}

    def _window_tables(self, written: list[tuple]) -> dict[str, list[tuple]]:
        """Every window row a delivery; the state per (key, window) is what a reader of the table makes of its
        committed rows: their counts summed in append mode (a window appended twice counts twice), the last one
        in update mode."""
        w, size = self.window, interval_ms(self.window["size"])
        deliveries, state = [], {}
        for _, batch, written_ms, rows in written:
            for row in rows:
                key, start, count = _at(row, w["key"]), _epoch_ms(_at(row, w["start"])), _at(row, w["count"])
                end = None if start is None else start + size
                deliveries.append(
                    (-1 if batch is None else batch, key, start, end, count, "{}", None, -1, -1, written_ms)
                )
                if batch is None:
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
    moment that tells a writer that skips a replayed batch from one that appends it again."""

    def __init__(self, output: FileOutput):
        self.log = output.folder / (DELTA_LOG if output.format == DELTA else SPARK_LOG)

    def latest_ms(self) -> int:
        try:
            entries = [e for e in os.scandir(self.log) if e.name.split(".")[0].isdigit()]
        except OSError:  # no log yet
            return 0
        return max((e.stat().st_mtime_ns // 1_000_000 for e in entries), default=0)

    def close(self) -> None:
        pass  # holds nothing open


def file_outputs(run: OutputRun) -> dict[str, FileOutput]:
    """The file outputs applications write, each in work/<output>/table."""
    return {
        name: FileOutput(
            file_output_folder(run, name), inst.settings["format"], inst.settings["identity"], inst.settings["window"]
        )
        for name, inst in run.scenario.blueprint.streamlets.items()
        if inst.kind == FILE_OUTPUT
    }


def file_output_folder(run: OutputRun, name: str) -> Path:
    return run.layout.workdir(name) / "table"


def file_probes(run: OutputRun, name: str) -> list[FileProbe]:
    """Probes of the file outputs application `name` writes."""
    return [FileProbe(output) for output in written_by(run, file_outputs(run), name)]


def export_files(run: OutputRun) -> None:
    """After the drivers stopped: each file output's committed and written rows, into the run directory."""
    for name, output in file_outputs(run).items():
        exported = output.export(ExportedEvidence.of(run.driver_paths(name)))
        cut = exported["cut_files"]
        unobserved = f"{len(cut)} data file(s) cut by a kill, unreadable: their rows are not counted as deliveries"
        record_export(run, name, exported, unobserved if cut else None, format=output.format)
