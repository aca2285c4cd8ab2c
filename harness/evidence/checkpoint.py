"""Reading Spark's checkpoint logs: offsets/N (what batch N reads) and commits/N (batch N done)."""

from __future__ import annotations

import bisect
import json
from datetime import datetime, timezone
from pathlib import Path

from contract.query_events import QUERY_PROGRESS


def _batch_ids(folder: Path) -> list[int]:
    if not folder.is_dir():
        return []
    return sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit())


def planned_batches(checkpoint: Path) -> list[int]:
    """Batch ids whose offsets were written (planned, maybe not finished)."""
    return _batch_ids(Path(checkpoint) / "offsets")


def committed_batches(checkpoint: Path) -> list[int]:
    """Batch ids marked done in commits/."""
    return _batch_ids(Path(checkpoint) / "commits")


def batch_offsets(path: Path) -> dict:
    """{topic: {partition: offset}} of an offsets file (offsets/N, or a source's initial offsets): its last line."""
    return json.loads(Path(path).read_text().splitlines()[-1])


def batch_end_offsets(checkpoint: Path, batch_id: int) -> dict:
    """{topic: {partition: offset}} that batch `batch_id` reads up to (its offsets/ entry)."""
    return batch_offsets(Path(checkpoint) / "offsets" / str(batch_id))


def batch_watermark_ms(checkpoint: Path, batch_id: int) -> int:
    """The event-time watermark batch `batch_id` ran with (its offsets/ entry's metadata; 0 before any)."""
    lines = (Path(checkpoint) / "offsets" / str(batch_id)).read_text().splitlines()
    return int(json.loads(lines[1]).get("batchWatermarkMs") or 0)


def last_planned(checkpoint: Path) -> dict:
    """The newest batch in offsets/ with its end offsets, or {} when there is none."""
    batches = planned_batches(checkpoint)
    if not batches:
        return {}
    return {"batch": batches[-1], "offsets": batch_end_offsets(checkpoint, batches[-1])}


def committed_positions(checkpoint: Path) -> dict[tuple[str, int], int]:
    """{(topic, partition): offset} a query has committed up to: the end offsets of its last committed batch whose
    offsets file reads (one being written, or cut by a damaged checkpoint, is passed over)."""
    ends: dict = {}
    for batch in reversed(committed_batches(checkpoint)):
        try:
            ends = batch_end_offsets(checkpoint, batch)
            break
        except (OSError, ValueError, IndexError):
            continue
    return {
        (topic, int(p)): int(o) for topic, parts in ends.items() if isinstance(parts, dict) for p, o in parts.items()
    }


class BatchTimes:
    """When each batch of a single query ran: from offsets/N written (planned) to commits/N written (done). A row a
    job wrote at a time within one batch's span was written by that batch (the first attempt or its replay): batch
    N+1 is planned only after commits/N."""

    def __init__(self, folder: Path):
        """`folder`: a streamlet's checkpoints, one query each; with more than one query, no write is placed."""
        queries = sorted(p for p in Path(folder).glob("*") if p.is_dir()) if Path(folder).is_dir() else []
        self.spans: list[tuple[int, int, int | None]] = []  # (planned_ms, batch, committed_ms) by planned time
        if len(queries) == 1:
            for batch in planned_batches(queries[0]):
                planned, committed = (queries[0] / step / str(batch) for step in ("offsets", "commits"))
                try:
                    start = planned.stat().st_mtime_ns // 1_000_000
                except OSError:
                    continue
                end = committed.stat().st_mtime_ns // 1_000_000 if committed.exists() else None
                self.spans.append((start, batch, end))
        self.spans.sort()
        self._starts = [start for start, _, _ in self.spans]

    def batch_at(self, at_ms: int) -> int:
        """The batch that was running at `at_ms` (ms since the epoch); -1 when none was."""
        i = bisect.bisect_right(self._starts, at_ms) - 1
        if i < 0:
            return -1
        _, batch, end = self.spans[i]
        return batch if end is None or at_ms <= end else -1


def batch_events(folder: Path) -> list[dict]:
    """An application's batches as query events like a streamlet's progress file has (progress/<streamlet>.jsonl):
    per batch committed in a checkpoint under `folder`, {"event": "progress", "ts_ms": when commits/N was written,
    "query", "progress": {"batchId", "numInputRows": records between its offsets and the previous batch's,
    "sources": [{"startOffset", "endOffset"}] (those offsets), "eventTime": {"watermark"} (the watermark it ran
    with, as Spark's progress gives it, once past 0)}}, in commit order. A batch's input is counted from the offsets
    log, so a batch a kill replayed counts again."""
    events = []
    for checkpoint in query_checkpoints(Path(folder)):
        before: dict = {}
        for batch in committed_batches(checkpoint):
            event = batch_event(checkpoint, batch, before)
            if event is not None:
                events.append(event)
                before = _end_offsets(event)
    return sorted(events, key=lambda e: e["ts_ms"])


def _end_offsets(event: dict) -> dict:
    """What a batch_event's batch read up to: the next batch's input is counted from there."""
    return event["progress"]["sources"][0]["endOffset"]


def batch_event(checkpoint: Path, batch: int, before: dict) -> dict | None:
    """The query event of `checkpoint`'s committed batch `batch` (batch_events says what it holds), its input
    counted from `before`, the previous batch's end offsets; None when its files were cut by a kill (the next
    batch's have the offsets)."""
    try:
        ends = batch_end_offsets(checkpoint, batch)
        watermark_ms = batch_watermark_ms(checkpoint, batch)
        committed_ms = (checkpoint / "commits" / str(batch)).stat().st_mtime_ns // 1_000_000
    except (OSError, ValueError, IndexError):
        return None
    ends = {t: parts for t, parts in ends.items() if isinstance(parts, dict)}
    rows = sum(
        max(0, int(offset) - int(before.get(topic, {}).get(p, 0)))
        for topic, parts in ends.items()
        for p, offset in parts.items()
    )
    progress = {"batchId": batch, "numInputRows": rows, "sources": [{"startOffset": before, "endOffset": ends}]}
    if watermark_ms:  # a query with a watermark that has passed any event (0: none yet, or none at all)
        progress["eventTime"] = {"watermark": _iso(watermark_ms)}
    return {"event": QUERY_PROGRESS, "ts_ms": committed_ms, "query": checkpoint.name, "progress": progress}


def merged_events(recorded: list[dict], found: list[dict]) -> list[dict]:
    """An application's batches: those recorded as they were committed (CommitLog), and those its checkpoint still
    holds that were not (committed after the last look), in commit order."""
    known = {(e.get("query"), (e.get("progress") or {}).get("batchId"), e.get("ts_ms")) for e in recorded}
    later = [e for e in found if (e["query"], e["progress"]["batchId"], e["ts_ms"]) not in known]
    return sorted(recorded + later, key=lambda e: e.get("ts_ms", 0))


class CommitLog:
    """An application's committed batches appended to a file (its progress file, in batch_events' form) as Spark
    commits them: a checkpoint keeps only its last batches (100 by default, spark.sql.streaming.minBatchesToRetain),
    so by a long run's end those of its first faults are gone. `record()` appends what was committed since it last
    looked; a checkpoint started again (batch ids from 0: a fresh one) is followed from its start."""

    def __init__(self, folder: Path, path: Path):
        self.folder, self.path = Path(folder), Path(path)
        self._seen: set[tuple[str, int, int]] = set()  # (query, batch, its commit's mtime in ns)
        self._last: dict[str, tuple[int, dict]] = {}  # query -> its last batch recorded and that batch's end offsets

    def record(self) -> int:
        """Append the batches committed since the last look; how many."""
        events = []
        for checkpoint in query_checkpoints(self.folder):
            for batch in committed_batches(checkpoint):
                try:
                    key = (checkpoint.name, batch, (checkpoint / "commits" / str(batch)).stat().st_mtime_ns)
                except OSError:
                    continue  # deleted by Spark as it looked
                if key in self._seen:
                    continue
                last, before = self._last.get(checkpoint.name, (-1, {}))
                event = batch_event(checkpoint, batch, before if batch > last else {})
                if event is None:
                    continue
                self._seen.add(key)
                self._last[checkpoint.name] = (batch, _end_offsets(event))
                events.append(event)
        if events:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a") as out:
                out.write("".join(json.dumps(e) + "\n" for e in sorted(events, key=lambda e: e["ts_ms"])))
        return len(events)


def _iso(ms: int) -> str:
    """Epoch milliseconds as Spark's progress writes a time (UTC, ISO 8601)."""
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _source_starts(checkpoint: Path) -> list[Path]:
    """Where each source of a query starts (sources/<n>/0: the Kafka source writes its initial offsets there as the
    query first starts, before any batch)."""
    return sorted(checkpoint.glob("sources/*/0"))


def _planned_topics(checkpoint: Path) -> set[str]:
    """The topics the newest planned batch of one query reads (none known yet, or a file being written: empty)."""
    try:
        return set(last_planned(checkpoint).get("offsets") or {})
    except (OSError, ValueError, IndexError):
        return set()


def planned_topics(folder: Path) -> set[str]:
    """The topics the newest planned batch of each query checkpoint under `folder` reads; before its first batch
    is planned (a Real-time Mode query plans none until its first checkpoint interval ends), those its sources
    start from."""
    found: set[str] = set()
    for checkpoint in query_checkpoints(Path(folder)):
        try:
            planned = last_planned(checkpoint).get("offsets", {})
            found |= set(planned or {t for p in _source_starts(checkpoint) for t in batch_offsets(p)})
        except (OSError, ValueError, IndexError):
            continue  # a file being written: the next look reads it
    return found


TEMPORARY = "temporary-"  # the prefix of the checkpoint folders Spark makes for a query given none


def query_checkpoints(folder: Path) -> list[Path]:
    """The query checkpoints in `folder`: itself, or its subfolders with an offsets log."""
    if (folder / "offsets").is_dir():
        return [folder]
    return sorted(p for p in folder.glob("*") if (p / "offsets").is_dir()) if folder.is_dir() else []


class CheckpointFollower:
    """An application's progress as its checkpoint folder shows it (the harness cannot listen to the queries of a
    job it does not change): the same questions the runner asks a streamlet's progress file (ProgressFollower).
    `folder` holds the query's checkpoint (offsets/, commits/) or one subfolder per query; `scratch`, the driver's
    temporary folder, the checkpoints Spark makes there for a query given none (temporary-<uuid>: a new one at each
    start, so every restart starts the query anew)."""

    def __init__(self, folder: Path, scratch: Path | None = None):
        self.folder = Path(folder)
        self.scratch = scratch
        self.failures: list[str] = []  # a job's failed query shows only as its exit (and its log)
        self.input_rows: dict[str, int] = {}  # unknown: a checkpoint does not count rows
        self._started: dict[int, float] = {}  # driver pid -> when it was started (the epoch, s)

    def poll(self) -> "CheckpointFollower":
        return self

    def _queries(self) -> list[Path]:
        temporary = sorted(self.scratch.glob(f"{TEMPORARY}*")) if self.scratch is not None else []
        return query_checkpoints(self.folder) + [p for p in temporary if (p / "offsets").is_dir()]

    def driver_started(self, pid: int, at: float) -> None:
        self._started[pid] = at

    @property
    def started(self) -> bool:
        return any(planned_batches(c) for c in self._queries())

    def reporting(self, pid: int) -> bool:
        """Has driver `pid` committed a batch since it was started (a job's first batch commits at once, empty
        or not; after a restart, the batch it replays or its next one)?"""
        since = self._started.get(pid)
        for checkpoint in self._queries():
            batches = committed_batches(checkpoint)
            if since is not None and batches:
                if (checkpoint / "commits" / str(batches[-1])).stat().st_mtime >= since:
                    return True
        return False

    def sources_started(self, pid: int) -> bool:
        """Has driver `pid`, on its query's first start, resolved where its sources start (a Real-time Mode
        query's only sign before its first checkpoint, when there may be nothing to read yet)?"""
        since = self._started.get(pid)
        return since is not None and any(p.stat().st_mtime >= since for c in self._queries() for p in _source_starts(c))

    def queries_ended(self, pid: int) -> bool:
        """Unknown from a checkpoint: only the job's exit says it writes nothing more."""
        return False

    def stateless(self) -> bool:
        """Whether every query has committed a batch and none keeps state: Spark writes a state store under its
        checkpoint's state/ (ProgressFollower.stateless says why that matters)."""
        checkpoints = self._queries()
        return bool(checkpoints) and all(committed_batches(c) and not (c / "state").exists() for c in checkpoints)

    def lag(self, log_ends: dict[tuple[str, int], int]) -> int | None:
        """Records of `log_ends` its slowest query has not committed yet, each query of the topics it reads (None:
        no query has planned a batch)."""
        checkpoints = self._queries()
        if not any(planned_batches(c) for c in checkpoints):
            return None

        def behind(checkpoint: Path) -> int:
            committed, reads = committed_positions(checkpoint), _planned_topics(checkpoint)
            ends = {tp: end for tp, end in log_ends.items() if not reads or tp[0] in reads}
            return sum(max(0, end - committed.get(tp, 0)) for tp, end in ends.items())

        return max(behind(c) for c in checkpoints)
