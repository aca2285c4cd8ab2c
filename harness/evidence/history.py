"""The history: one JSON line per thing that happened during a run, flushed at once."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Iterator

MIB = 1024 * 1024  # the unit of the `resources` samples' rss_mb and disk_mb
BUDGET = "evidence_budget"  # the run's evidence budget, as the workload starts
BUDGET_REACHED = "evidence_budget_reached"  # the workload ended early at the run's evidence budget
FAULT_PLANNED = "fault_planned"  # a fault the run means to play: its number, kind, target, planned_s and window_s
MOMENT_MISSED = "crash_point_missed"  # a fault's moment (a batch written, or in flight) did not come in time
WORLD_PREPARED = "world_prepared"  # an application's world: its relays, its binds, its folder, its rendered files
REQUIREMENTS_INSTALLED = "requirements_installed"  # an application's own requirements: where, what, how long
SETUP_RAN = "setup_ran"  # an application's setup step ran in its world: its command, exit code and time
TOPIC_RECREATED = "topic_recreated"  # topics deleted and created again under a streamlet, what it had read of them
CANARY_ARRIVED = "canary_arrived"  # the preflight's canary reached every output: how long it took
CANARY_SENT = "canary_sent"  # the preflight's canary record was sent
CHECKPOINT_DAMAGED = "checkpoint_damaged"  # damage-checkpoint removed or cut files of a checkpoint: which, kept where
CHECKPOINT_DELETED = "checkpoint_deleted"  # a redeploy set a streamlet's checkpoint aside (kept_as)
CLOSING_SENT = "closing_sent"  # a closing record that makes every window and padded row due be emitted was sent
CLUSTER = "cluster"  # the Kafka cluster the run uses: its kind and bootstrap servers
CONSUMER_POSITION = "consumer_position"  # a streamlet's committed offsets, read as its driver was killed
DRAIN_INCOMPLETE = "drain_incomplete"  # the pipeline did not drain: why
DRAINED = "drained"  # every streamlet read what was sent; those whose query failed
EVIDENCE_INCOMPLETE = "evidence_incomplete"  # a step that collects evidence at the end failed: which, and its error
EXECUTOR_ADDED = "executor_added"  # an executor of a streamlet's application started on the standalone cluster
EXECUTOR_REMOVED = "executor_removed"  # an executor of a streamlet's application ended
FAULT_BEGUN = "fault_begun"  # a fault struck: its kind, target, classification and moment
FAULT_ENDED = "fault_ended"  # a fault ended (its target back, where it restarts)
FAULT_FAILED = "fault_failed"  # a fault could not be played: its error
FAULT_INCOMPLETE = "fault_incomplete"  # a fault struck but could not finish: why
FAULT_SKIPPED = "fault_skipped"  # a planned fault was not played: why
FAULT_UNDO_FAILED = "fault_undo_failed"  # undoing a fault failed (tried again)
FAULT_UNDONE = "fault_undone"  # a fault's change to the world was undone
LOG_START_OBSERVED = "log_start_observed"  # the log-start offsets a retention shrink waited for
OFFSETS = "offsets"  # a sample of every partition's log-start and log-end offsets
OFFSETS_AVAILABLE = "offsets_available"  # the offsets could be sampled again
OFFSETS_UNAVAILABLE = "offsets_unavailable"  # the offsets could not be sampled: the error, once per outage
OUTPUT_EXPORTED = "output_exported"  # an output's state exported at the end: what the harness saw of its writes
OUTPUT_PREPARED = "output_prepared"  # an output made ready before the workload (its table, its folder)
PARTITIONS_ADDED = "partitions_added"  # partitions added to a topic
PROCESS_EXITED = "process_exited"  # a process ended by itself: its exit code
PROCESS_KILLED = "process_killed"  # a process killed by a fault: its signal and exit code
PRODUCERS_RECORDED = "producers_recorded"  # producers.csv written: the topics and how many batches
PROCESS_PAUSED = "process_paused"  # a process paused (SIGSTOP, docker pause)
PROCESS_RESUMED = "process_resumed"  # a paused process resumed
PROCESS_STARTED = "process_started"  # a process started: its name, pid and role
PROCESS_STOPPED = "process_stopped"  # a process stopped by the run at its end: its signal and exit code
QUERY_FAILED = "query_failed"  # a streamlet's query failed: its error
RESOURCES = "resources"  # a sample of each process's memory and the run directory's size
RUN_ENDED = "run_ended"  # the run ended (the last line of a finished run)
RUN_ERROR = "run_error"  # the workload stopped early: the error
RUN_INTERRUPTED = "run_interrupted"  # the run was interrupted (Ctrl-C, SIGTERM)
SOURCE_READ = "source_read"  # what was read back of the source topic at the end: records and missing ones
SPARK_APPLICATION = "spark_application"  # a streamlet's Spark application on the standalone cluster: its id
STATE_EXPORTED = "state_exported"  # an egress exported its final state: its exit code
STORE_COPIED = "store_copied"  # an egress's rows copied out of the store
TOPIC_CONFIG_CHANGED = "topic_config_changed"  # a topic's configuration changed (retention)
TOPIC_CREATED = "topic_created"  # a topic created: its partitions, replication and config
TOPICS_RECORDED = "topics_recorded"  # the topics the recorder wrote to the run directory, and how many records
WINDOWS_CLOSED = "windows_closed"  # every window and padded row due was emitted after the closing record
WINDOWS_NOT_CLOSED = "windows_not_closed"  # the windows (padded rows) still open were not closed: why
WORKLOAD_STOPPED = "workload_stopped"  # the generator was asked to stop: why


def faults_begun(history: list[dict], kind: str) -> Iterator[tuple[dict, list[dict]]]:
    """Each fault_begun of `kind`, with the events after it."""
    for i, event in enumerate(history):
        if event.get("event") == FAULT_BEGUN and event.get("kind") == kind:
            yield event, history[i + 1 :]


class History:
    """Append-only event log (thread-safe); a crash of the harness leaves every line written so far."""

    def __init__(self, path: Path):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._file = open(path, "a")
        self._lock = threading.Lock()

    def record(self, event: str, ts_ms: int | None = None, **fields) -> None:
        """Append `event` with `fields`, at `ts_ms` (now when not given: an observation made earlier gives when)."""
        when = int(time.time() * 1000) if ts_ms is None else ts_ms
        line = json.dumps({"ts_ms": when, "event": event, **fields}, default=str)
        with self._lock:
            self._file.write(line + "\n")
            self._file.flush()

    def close(self) -> None:
        with self._lock:
            self._file.close()
