"""Reading the streamlets' query events (progress/<streamlet>.jsonl), whole or while they grow."""

from __future__ import annotations

import json
import threading
from collections import defaultdict
from pathlib import Path

from contract.query_events import QUERY_IDLE, QUERY_PROGRESS, QUERY_STARTED, QUERY_TERMINATED
from harness.evidence.tail import LineTail


def query_events(path: Path) -> list[dict]:
    """Every complete JSON line of a progress file (a line being written is skipped)."""
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        return []
    events = []
    for line in text.splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            continue
    return events


def source_offsets(value) -> dict:
    """A progress source's start/endOffset ({topic: {partition: offset}}), which Spark may give as JSON text."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


class ProgressFollower:
    """Follows one streamlet's progress file as it grows, reading each line once.

    Keeps what the runner watches: which queries started, each query's latest
    end offsets per (topic, partition) (the latest, not the highest: a redeploy
    from earliest goes back), rows read, and queries that terminated with an error.
    """

    def __init__(self, path: Path):
        self._tail = LineTail(path)
        self._lock = threading.Lock()
        self.started: set[str] = set()
        self.end_offsets: dict[str, dict[tuple[str, int], int]] = defaultdict(dict)
        self.input_rows: dict[str, int] = defaultdict(int)
        self.failures: list[str] = []  # exception texts of queries that ended by themselves
        self.reporting_pids: set[int] = set()  # driver processes that ran a batch or reported idle
        self.state_operators: dict[str, bool] = {}  # query -> whether its latest batch ran state operators
        self._runs: dict[int | None, set[str]] = defaultdict(set)  # driver pid -> the run ids of its queries
        self._ended: set[str] = set()  # the run ids of queries that ended

    def poll(self) -> "ProgressFollower":
        with self._lock:  # the main loop and a fault's thread may both look
            for line in self._tail.new_lines():
                try:
                    self._apply(json.loads(line))
                except ValueError:
                    continue
        return self

    def _apply(self, event: dict) -> None:
        if event["event"] == QUERY_STARTED:
            self.started.add(event["query"])
            self._runs[event.get("pid")].add(event.get("run_id"))
        elif event["event"] == QUERY_IDLE:
            self.reporting_pids.add(event.get("pid"))
        elif event["event"] == QUERY_TERMINATED:
            self._ended.add(event.get("run_id"))
            if event.get("exception"):
                self.failures.append(event["exception"])
        elif event["event"] == QUERY_PROGRESS:
            query, progress = event["query"], event["progress"]
            self.reporting_pids.add(event.get("pid"))
            self.input_rows[query] += progress.get("numInputRows", 0)
            self.state_operators[query] = bool(progress.get("stateOperators"))
            for source in progress.get("sources", []):
                for topic, partitions in source_offsets(source.get("endOffset")).items():
                    for partition, offset in partitions.items():
                        self.end_offsets[query][(topic, int(partition))] = int(offset)

    def reporting(self, pid: int) -> bool:
        """Has driver `pid` run a batch or found nothing to do (it is up, not just starting)?"""
        return pid in self.reporting_pids

    def queries_ended(self, pid: int) -> bool:
        """Whether every query driver `pid` started has ended: it writes nothing more, while its JVM still shuts
        down."""
        return bool(self._runs.get(pid)) and self._runs[pid] <= self._ended

    def stateless(self) -> bool:
        """Whether every query started has run a batch and none holds state: such a streamlet writes only what it
        reads (Spark runs a batch without input only for state operators: a watermark moved on, a timeout)."""
        return bool(self.started) and all(self.state_operators.get(q) is False for q in self.started)

    def lag(self, log_ends: dict[tuple[str, int], int]) -> int | None:
        """Records of `log_ends` (the streamlet's input partitions) its slowest query has not processed yet."""
        if not self.started:
            return None
        return max(
            sum(max(0, end - self.end_offsets.get(query, {}).get(tp, 0)) for tp, end in log_ends.items())
            for query in self.started
        )
