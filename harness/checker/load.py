"""Loading a run directory into typed, columnar evidence for the checker (read by file_readers.py and
egress_readers.py, each record one rid: record_ids.py).

Only reads files: no broker, no Spark, no database server. Large files are
read with Arrow (CSV, JSON lines, SQLite through ADBC) into compact columns;
records are identified by one int64 `rid` (RecordIds), so every join and
count downstream is a vectorized operation on integers. An ordinary record
(a key, a seq from 0 to 2**40) has rid = key code * 2**40 + seq; any other
(key, seq) a file can hold (a negative, huge, fractional or text seq, a
missing key or seq) gets a negative rid of its own, so it is that record or a
phantom, never another record.

A missing or unreadable piece of evidence is not fatal: it is listed in
`Evidence.gaps` (file and what is wrong) and the checker reports what it
could judge. A last line cut mid-record (what a SIGKILL leaves) is dropped
and listed; a damaged line in the middle is skipped and named by its line
number. Only a missing run directory, pipeline description or acknowledgement log stops it.

What the pipeline is (its streamlets, roles, topics, egress evidence, expectations) comes from the run
directory's pipeline.json alone: the checker imports neither the streamlets nor the scenario parser.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from contract.egress import AGGREGATE, TOPIC, WINDOWS
from contract.roles import EGRESS, INGRESS
from harness.checker.egress_readers import Egress, egress
from harness.checker.file_readers import (
    EvidenceError,
    read_acks,
    read_dropped,
    read_history,
    read_json,
    read_progress,
    read_sent,
    read_topic_dump,
    read_topic_segments,
)
from harness.checker.joins import join_drops
from harness.checker.record_ids import RecordIds
from harness.checker.retried import lost_responses, retried_copies
from harness.checker.rid_sets import Positions
from harness.checker.selection import Selection
from harness.evidence.acks import ack_batch
from harness.evidence.description import PipelineDescription, StreamletDescription
from harness.evidence.history import PROCESS_STARTED, TOPICS_RECORDED
from harness.evidence.layout import RunLayout


@dataclass
class Evidence:
    root: Path
    pipeline: PipelineDescription  # pipeline.json: what ran, and what it was expected to show
    resolved: dict  # duration, seed, schedule
    run: dict  # run.json (empty when the run did not finish writing it)
    ids: RecordIds  # record identity: rid <-> (key, seq)
    sent: pd.DataFrame  # rid, key (code), event_time_ms, late, acked, partition, offset: one row per record
    history: list[dict]
    progress: dict[str, list[dict] | None]  # streamlet -> query events (None: file missing)
    topics: dict[str, pd.DataFrame]  # hop topic -> partition, offset, timestamp_ms, rid, key, seq, batches
    egresses: list[Egress]
    gaps: list[str] = field(default_factory=list)
    has_history: bool = True
    versions: dict = field(default_factory=dict)  # versions.json: Spark, the connector, Kafka, Python
    dropped: dict[str, np.ndarray] = field(default_factory=dict)  # streamlet -> rids it dropped by design (declared)
    # (topic, partition) -> offsets of records whose produce response the network proxy dropped (kafka-error)
    lost_responses: dict[tuple[str, int], list[int]] = field(default_factory=dict)

    @property
    def streamlets(self) -> tuple[StreamletDescription, ...]:
        """pipeline.json's, in pipeline order."""
        return self.pipeline.streamlets

    @property
    def source_topic(self) -> str:
        return self.pipeline.source_topic

    @property
    def keys(self) -> np.ndarray:
        """Key dictionary: code -> key text."""
        return self.ids.keys

    def sent_to(self, topics: tuple[str, ...]) -> pd.DataFrame:
        """The acknowledgement log's rows of the records sent to these source topics, told by their keys' prefixes
        (pipeline.json source_keys); a workload of one source topic, or all of them: every row."""
        prefixes = self.pipeline.source_keys
        if not prefixes or set(prefixes) <= set(topics):
            return self.sent
        wanted = tuple(prefixes[t] for t in topics if t in prefixes)
        of_code = np.array([isinstance(k, str) and k.startswith(wanted) for k in self.keys] + [False])
        return self.sent[of_code[self.sent.key.to_numpy()]]  # a code of -1 (no key) takes the last: none

    def sent_at(self, rids: np.ndarray, columns: list[str]) -> pd.DataFrame:
        """The acknowledgement log's `columns` at each of `rids` (NaN for a rid never sent), as
        sent.set_index("rid").reindex(rids) gives them, without an index of every record sent (at 10M records that
        took 6 s and a copy of the log): one lookup by place for all the columns."""
        if not len(self.sent):
            return pd.DataFrame({c: np.full(len(rids), np.nan) for c in columns})
        at = Positions(self.sent.rid.to_numpy()).of(rids)
        found, place = at >= 0, np.maximum(at, 0)
        taken = {c: self.sent[c].to_numpy()[place] for c in columns}
        if not found.all():
            taken = {c: np.where(found, v, np.nan) for c, v in taken.items()}
        return pd.DataFrame(taken)


def _pipeline(layout: RunLayout) -> PipelineDescription:
    try:
        return PipelineDescription.load(layout.pipeline)
    except FileNotFoundError:
        raise EvidenceError(
            f"{layout.pipeline}: missing: the checker needs the description of the pipeline that ran "
            "(written at the start of every run)"
        ) from None
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise EvidenceError(
            f"{layout.pipeline}: unreadable ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
        ) from None


def never_began(ack_log: Path, run: dict, history: list[dict] | None) -> bool:
    """A run that ended before its workload began (a job that exited at start): no ack log, the run's end recorded
    with nothing acknowledged, and no generator ever started. Its report says why it ended; its verdict is unknown."""
    started = any(e["event"] == PROCESS_STARTED and e.get("process") == "generator" for e in history or [])
    return not ack_log.exists() and bool(run.get("status")) and run.get("acked") == 0 and not started


def load_evidence(run_dir: Path, selection: Selection | None = None) -> Evidence:
    """The run directory's evidence; with a `selection`, every table holds only the rows of its records (named by its
    RecordIds), read a segment or a block at a time so that the rest is never held."""
    root = Path(run_dir)
    if root.is_file():
        raise EvidenceError(f"{root}: a file, not a run directory (give the folder a run wrote its evidence in)")
    if not root.is_dir():
        raise EvidenceError(f"{root}: no such run directory")
    layout = RunLayout(root)
    gaps: list[str] = []
    pipeline = _pipeline(layout)
    scenario_file = read_json(layout.scenario, gaps, "the run's seed, duration and schedule")
    run = read_json(layout.summary, gaps, "how the run ended")
    ack_log = layout.written_ack_log
    history = read_history(layout.history, gaps)
    if never_began(ack_log, run, history):
        ack_table = pa.Table.from_batches([ack_batch([])])
        gaps.append(
            f"{ack_log.name}: none: the run ended ({run.get('status')}) before its workload began; nothing was sent, "
            "so nothing can be judged"
        )
    else:
        ack_table = read_acks(ack_log, gaps, selection)
    ids = selection.ids if selection is not None else RecordIds(ack_table["key"].combine_chunks())
    sent = read_sent(ack_table, ids, gaps, ack_log.name + ("/" if ack_log.is_dir() else ""))
    del ack_table  # its text columns are the largest thing loaded; only the compact columns stay
    lost = lost_responses(layout, gaps)
    sent["retried_copies"] = retried_copies(lost, layout, sent, ids.keys, gaps, pipeline.source_topics)
    streamlets = pipeline.streamlets
    topics = _topics(layout, streamlets, ids, gaps, pipeline.source_header, selection)
    egresses = []
    for s in streamlets:
        if s.role != EGRESS or s.egress_evidence == AGGREGATE:  # an aggregate's values: checks/aggregates.py
            continue
        try:
            egresses.append(egress(layout, s, ids, gaps, selection))
        except FileNotFoundError as exc:
            missing = Path(exc.args[0]).name if exc.args else f"{s.name}.sqlite"
            gaps.append(
                f"egress/{missing}: missing ("
                + (
                    "its state was not exported: nothing known about what the egress kept)"
                    if missing.endswith(".state.jsonl")
                    else "nothing known about what the egress received)"
                )
            )
        except Exception as exc:  # ADBC raises driver-specific errors for corrupt databases
            gaps.append(f"egress/{s.name}.sqlite: unreadable ({str(exc).splitlines()[0]})")
    progress = read_progress(layout, streamlets, gaps)
    _recording_gaps(history or [], gaps)
    resolved = scenario_file.get("resolved")
    return Evidence(
        root,
        pipeline,
        resolved if isinstance(resolved, dict) else {},
        run,
        ids,
        sent,
        history or [],
        progress,
        topics,
        egresses,
        gaps,
        has_history=history is not None,
        versions=read_json(layout.versions, [], "versions"),
        dropped=_with_joins(
            read_dropped(layout, streamlets, ids, gaps), join_drops(layout.partners, pipeline, ids, history or [], gaps)
        ),
        lost_responses=lost,
    )


def _with_joins(dropped: dict[str, np.ndarray], joins: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The records each streamlet dropped by design: those it declared, and those its join has no result for."""
    names = set(dropped) | set(joins)
    return {n: np.union1d(dropped.get(n, np.zeros(0, np.int64)), joins.get(n, np.zeros(0, np.int64))) for n in names}


def _topics(
    layout: RunLayout, streamlets, ids: RecordIds, gaps: list[str], header: str | None, selection: Selection | None
) -> dict[str, pd.DataFrame]:
    """The recordings of the topics judged as hops (each read by its form: segments, or JSON lines)."""
    topics: dict[str, pd.DataFrame] = {}
    # An output topic (egress evidence `topic`) is read as its egress's evidence, not as a hop of its own; with a
    # selection, a window egress's topic of counts is not read either: it holds no record, and an engine judges the
    # windows (naming its rows' identities, each key's count as a record of its own, took longer than the rest).
    for topic in [t for s in streamlets if s.role != INGRESS and not _unread(s, selection) for t in s.inputs]:
        path, segments = layout.topic_dump(topic), layout.topic_segments(topic)
        try:
            if segments.is_dir():
                topics[topic] = read_topic_segments(segments, ids, gaps, header, selection)
            else:
                topics[topic] = read_topic_dump(path, ids, gaps, header, selection)
        except FileNotFoundError:
            gaps.append(f"topics/{topic}.jsonl: missing (hop {topic} not judged)")
        except (pa.ArrowInvalid, KeyError, OSError) as exc:
            gaps.append(f"topics/{topic}.jsonl: unreadable ({str(exc).splitlines()[0]}); hop {topic} not judged")
    return topics


def _unread(streamlet: StreamletDescription, selection: Selection | None) -> bool:
    """Whether the topics a streamlet reads are not read as hops (see load_evidence)."""
    return streamlet.egress_evidence in (TOPIC, AGGREGATE) or (
        selection is not None and streamlet.egress_evidence == WINDOWS
    )


def _recording_gaps(history: list[dict], gaps: list[str]) -> None:
    """Records retention deleted before the run's recording of an intermediate topic reached them: missing from
    that hop although the topic had them, so its counts there are not exact (a lost record is placed there by
    the records written before and after it: harness/checker/causes.py)."""
    for event in history:
        if event["event"] != TOPICS_RECORDED:
            continue
        for row in event.get("missed") or []:
            if isinstance(row, list) and len(row) == 4:
                topic, partition, low, high = row
                gaps.append(
                    f"topics/{topic}.jsonl: offsets {low} to {high - 1} of partition {partition} were deleted by "
                    f"retention before they were recorded; hop {topic}'s losses there may be records it had (a lost "
                    "record is attributed to that retention when the records written before and after it bracket "
                    "those offsets)"
                )
