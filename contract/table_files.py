"""A table of Parquet data files committed through a log, read without Spark: Spark's file sink (its
`_spark_metadata` log) and Delta Lake (its `_delta_log`). The harness's own sinks and the file outputs of a team's
unchanged job are judged from these same files.

A data file is delivered once written, committed once its log lists it: a batch killed between writing its files
and committing them leaves them on disk, and a reader of the table never sees them. A partitioned table keeps its
files in `column=value` subfolders, read whole with those columns added.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

SPARK_LOG = "_spark_metadata"
DELTA_LOG = "_delta_log"
DELTA_CHANGES = "_change_data"  # a Delta table's change data feed files (delta-rs names them part-*.parquet too)
PARQUET_MAGIC = b"PAR1"  # a Parquet file ends with its footer and these bytes: one without them was cut


def spark_committed_files(table: Path) -> dict[str, int]:
    """Data file name -> the batch that committed it, from Spark's file sink metadata log (a compact file, every
    few batches, lists every earlier batch's files too: a file first seen there is given that batch)."""
    logs = []
    for entry in (table / SPARK_LOG).glob("*"):
        name = entry.name.removesuffix(".compact")
        if name.isdigit():
            logs.append((int(name), entry))
    batch_of, deleted = {}, set()
    for batch, entry in sorted(logs):
        for line in entry.read_text().splitlines()[1:]:  # the first line is the log's version ("v1")
            if not line.strip():
                continue
            item = json.loads(line)
            name = Path(unquote(item["path"])).name
            if item.get("action") == "delete":
                deleted.add(name)
            else:
                batch_of.setdefault(name, batch)
    return {name: batch for name, batch in batch_of.items() if name not in deleted}


@dataclass(frozen=True)
class DeltaLog:
    """A Delta table's log replayed (its JSON commits in order): the data files live after its last commit, by the
    protocol's file identity (a path and its deletion vector: a MERGE that marks rows deleted adds a file's path
    with its new vector and removes it with its old one, in one commit), and what a reader must implement."""

    version: int  # the last commit read (-1: none yet)
    live: dict[str, int]  # data file name -> the batch that wrote its rows (its commit's txn version; -1 without one)
    vectors: dict[str, dict]  # data file name -> the deletion vector of a live file that has one (its descriptor)
    reader_features: frozenset[str]  # the table's protocol's readerFeatures
    column_mapping: str | None  # delta.columnMapping.mode, where the table's metadata sets one other than none
    # Data files first added with dataChange false: a compaction's (OPTIMIZE, auto compaction) rewrite of rows the
    # files it removed held, no rows of their own.
    rewritten: frozenset[str] = frozenset()
    # The commits that rewrote rows (a MERGE, UPDATE or DELETE copying the other rows of the files it replaced, or
    # listing its changes in the change data feed), in order.
    rewrites: tuple[DeltaRewrite, ...] = ()


@dataclass(frozen=True)
class DeltaRewrite:
    """A commit that replaced data files with new ones holding their rows (copy-on-write), or that lists its changes
    in the change data feed (`cdc` actions: the table's delta.enableChangeDataFeed)."""

    version: int
    batch: int  # its txn version (-1: none)
    timestamp_ms: int  # its commitInfo's
    removed: tuple[str, ...]  # the data files it removed whole (not added again with a new deletion vector)
    added: tuple[str, ...]  # the data files it added with dataChange true
    changes: bool  # it added change data files: its changes are read from the change data feed
    updated: int  # the rows its operation metrics say it updated (numTargetRowsUpdated, numUpdatedRows)
    inserted: int  # and inserted (numTargetRowsInserted)
    copied: int | None  # and copied (numTargetRowsCopied, numCopiedRows; None: its writer does not say)


def _vector_id(action: dict) -> str | None:
    """A deletion vector's unique id (storage type, path or inline bitmap, offset), None for a file without one."""
    dv = action.get("deletionVector")
    if not dv:
        return None
    return f"{dv['storageType']}{dv['pathOrInlineDv']}" + (f"@{dv['offset']}" if dv.get("offset") is not None else "")


def delta_log(table: Path) -> DeltaLog:
    """Replay a Delta table's log, each commit's actions in their order. A file added again with a deletion vector
    keeps the batch of the rows it holds: they were written by the commit that first added it."""
    live: dict[tuple[str, str | None], tuple[int, dict | None]] = {}
    added, rewritten, rewrites = set(), set(), []
    version, features, mapping = -1, frozenset(), None
    for commit in sorted((table / DELTA_LOG).glob("*.json")):
        actions = [json.loads(line) for line in commit.read_text().splitlines() if line.strip()]
        version = int(commit.stem)
        batch = int(next((a["txn"]["version"] for a in actions if "txn" in a), -1))
        earlier = {name: written for (name, _), (written, _) in live.items()}  # of the files live before it
        for action in actions:
            if "remove" in action:
                live.pop((Path(unquote(action["remove"]["path"])).name, _vector_id(action["remove"])), None)
            elif "add" in action:
                add, name = action["add"], Path(unquote(action["add"]["path"])).name
                written = earlier.get(name, batch) if add.get("deletionVector") else batch
                live[(name, _vector_id(add))] = (written, add.get("deletionVector"))
                if name not in added and add.get("dataChange") is False:
                    rewritten.add(name)
                added.add(name)
        rewrite = _rewrite(version, batch, actions)
        if rewrite is not None:
            rewrites.append(rewrite)
        for action in actions:
            if "protocol" in action:
                features = frozenset(action["protocol"].get("readerFeatures") or ())
            if "metaData" in action:
                mode = (action["metaData"].get("configuration") or {}).get("delta.columnMapping.mode")
                mapping = None if mode in (None, "none") else mode
    return DeltaLog(
        version,
        {name: written for (name, _), (written, _) in live.items()},
        {name: dv for (name, _), (_, dv) in live.items() if dv},
        features,
        mapping,
        frozenset(rewritten),
        tuple(rewrites),
    )


def _metric(metrics: dict, *names: str, default: int | None = 0) -> int | None:
    """An operation metric as Spark's Delta names it (numTargetRowsUpdated) or delta-rs does (num_target_rows_updated);
    `default` where neither is there."""
    for name in names:
        for spelled in (name, re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()):
            if metrics.get(spelled) is not None:
                return int(metrics[spelled])
    return default


def _rewrite(version: int, batch: int, actions: list[dict]) -> DeltaRewrite | None:
    """A commit's rewrite of rows (DeltaRewrite), None for one that rewrote none."""
    names = {kind: [Path(unquote(a[kind]["path"])).name for a in actions if kind in a] for kind in ("add", "remove")}
    removed = tuple(n for n in names["remove"] if n not in names["add"])  # not a file given a new deletion vector
    added = tuple(Path(unquote(a["add"]["path"])).name for a in actions if "add" in a and a["add"].get("dataChange"))
    changes = any("cdc" in a for a in actions)
    if not changes and not (removed and added):
        return None
    info = next((a["commitInfo"] for a in actions if "commitInfo" in a), {})
    metrics = info.get("operationMetrics") or {}
    updated = _metric(metrics, "numTargetRowsUpdated", "numUpdatedRows")
    inserted = _metric(metrics, "numTargetRowsInserted")
    copied = _metric(metrics, "numTargetRowsCopied", "numCopiedRows", default=None)
    when = int(info.get("timestamp") or 0)
    return DeltaRewrite(version, batch, when, removed, added, changes, updated, inserted, copied)


def delta_live_files(table: Path) -> dict[str, int]:
    """Data file name -> the batch that wrote its rows, for every file the Delta log has live after its last
    commit (delta_log)."""
    return delta_log(table).live


def data_files(table: Path) -> list[Path]:
    """Every data file written under `table` (partition subfolders too, never the logs nor the change data feed),
    committed or not, in the order they were written."""
    logs = {SPARK_LOG, DELTA_LOG, DELTA_CHANGES}
    found = [p for p in table.rglob("part-*.parquet") if not logs & set(p.relative_to(table).parts)]
    return sorted(found, key=lambda p: (p.stat().st_mtime_ns, p.name))


def finished(path: Path | str) -> bool:
    """Whether a data file was written to its end (its footer's magic bytes are there)."""
    try:
        with open(path, "rb") as f:
            f.seek(-len(PARQUET_MAGIC), os.SEEK_END)
            return f.read(len(PARQUET_MAGIC)) == PARQUET_MAGIC
    except OSError:  # shorter than the magic, or gone
        return False


def partition_values(table: Path, path: Path) -> dict[str, str]:
    """The `column=value` folders between the table and a data file (a partitioned table's columns)."""
    parts = path.relative_to(table).parts[:-1]
    return {unquote(k): unquote(v) for k, _, v in (p.partition("=") for p in parts if "=" in p)}


def read_rows(table: Path, path: Path, columns: list[str] | None = None) -> list[dict] | None:
    """A data file's rows, its partition columns added; None when it cannot be read (cut by a kill: no footer)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        data = pq.read_table(path, columns=columns, partitioning=None)
    except (pa.ArrowInvalid, OSError):
        return None
    rows = data.to_pylist()
    extra = partition_values(table, path)
    if extra:
        for row in rows:
            for name, value in extra.items():
                row.setdefault(name, value)
    return rows
