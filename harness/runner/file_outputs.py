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
from pathlib import Path
from typing import TYPE_CHECKING

from contract.applications import DELTA, FILE_OUTPUT, FULLY, PARTLY
from contract.egress import AUDIT, AUDIT_COLUMNS, MAIN_QUERY, STATE, STATE_COLUMNS
from contract.identity import IdentityReader
from contract.table_files import (
    DELTA_LOG,
    SPARK_LOG,
    data_files,
    delta_live_files,
    read_rows,
    spark_committed_files,
)
from harness.runner.table_outputs import identity_text
from pipelines.stores import Store

if TYPE_CHECKING:
    from harness.runner.pipeline_run import PipelineRun


@dataclass(frozen=True)
class FileOutput:
    """An output table of data files in `folder`, committed through its format's log."""

    folder: Path
    format: str  # delta or parquet
    identity: dict

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

    def export(self, sqlite_path: Path) -> dict:
        """Copy the committed rows (state) and every data file's rows (deliveries) into `sqlite_path`, in the
        contract's tables; returns what was exported and the files that could not be read."""
        read = IdentityReader(self.identity)
        committed = self.committed() if self.folder.is_dir() else {}
        deliveries, state, cut = [], [], []
        files = data_files(self.folder) if self.folder.is_dir() else []
        for path in files:
            rows = read_rows(self.folder, path)
            if rows is None:
                cut.append(path.name)
                continue
            batch = committed.get(path.name, -1)
            written_ms = os.stat(path).st_mtime_ns // 1_000_000
            for row in rows:
                key, seq = (identity_text(part) for part in read({"value": row}))
                deliveries.append((MAIN_QUERY, batch, key, seq, -1, "{}", None, -1, -1, written_ms))
                if path.name in committed:
                    state.append((key, seq, -1, None, batch, "{}", written_ms))
        store = Store(sqlite_path=sqlite_path)
        store.create_tables(upsert_key=False, only=(AUDIT, STATE))
        with store.transaction() as tx:
            store.insert(tx, AUDIT, AUDIT_COLUMNS, deliveries)
            store.insert(tx, STATE, STATE_COLUMNS, state)
        uncommitted = sum(1 for p in files if p.name not in committed)
        return {
            "rows": len(state),
            "deliveries": len(deliveries),
            "files": len(files),
            "uncommitted_files": uncommitted,
            "cut_files": cut,
        }


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


def file_outputs(run: PipelineRun) -> dict[str, FileOutput]:
    """The file outputs applications write, each in work/<output>/table."""
    return {
        name: FileOutput(file_output_folder(run, name), inst.settings["format"], inst.settings["identity"])
        for name, inst in run.scenario.blueprint.streamlets.items()
        if inst.kind == FILE_OUTPUT
    }


def file_output_folder(run: PipelineRun, name: str) -> Path:
    return run.layout.workdir(name) / "table"


def file_probes(run: PipelineRun, name: str) -> list[FileProbe]:
    """Probes of the file outputs application `name` writes."""
    return [
        FileProbe(output)
        for output_name, output in file_outputs(run).items()
        if run.scenario.blueprint.streamlets[output_name].settings["written_by"] == name
    ]


def export_files(run: PipelineRun) -> None:
    """After the drivers stopped: each file output's committed and written rows, into the run directory."""
    for name, output in file_outputs(run).items():
        exported = output.export(run.layout.egress_db(name))
        cut = exported["cut_files"]
        unobserved = f"{len(cut)} data file(s) cut by a kill, unreadable: their rows are not counted as deliveries"
        run.history.record(
            "output_exported",
            output=name,
            format=output.format,
            observed=PARTLY if cut else FULLY,
            unobserved=unobserved if cut else None,
            **exported,
        )
