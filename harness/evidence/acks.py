"""The generator's acknowledgement log: its columns and two forms (acks.csv, or a folder of segments), and counting
it while it grows, reading each line once (each closed segment once)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from contract.segments import read_segment, segments
from harness.evidence.tail import LineTail

# One line per record the generator sent. status: acked (partition/offset known), unknown (timed out or
# failed: it may or may not have been written), or aborted (written at partition/offset in a transaction the
# generator aborted; the record is written again, with a line of its own, in the next transaction). resend: 1 for
# a deliberate copy of a record sent before (the resend fault), 0 for the first (a log without the column: 0).
ACK_TYPES = {
    "key": pa.string(),
    "seq": pa.int64(),
    "event_time_ms": pa.int64(),
    "late": pa.int8(),
    "status": pa.string(),
    "partition": pa.int32(),
    "offset": pa.int64(),
    "resend": pa.int8(),
}
ACK_LOG_COLUMNS = tuple(ACK_TYPES)
ACK_ROWS_PER_SEGMENT = 100_000  # small segments: the runner's count of the log reads its open one again each time
ACK_BATCH_ROWS, ACK_BATCH_S = 10_000, 0.5  # a batch of the columnar form: this many lines, or what this long gathered


WORKER_PREFIX = "worker-"  # acks/worker-NN/: the segments of one of a generator's several processes


def columnar_ack_log(path: str) -> bool:
    """An ack log is acks.csv, or in columnar form a folder of segments (contract/segments.py)."""
    return not str(path).endswith(".csv")


def worker_ack_log(path: str, worker: int) -> str:
    """Where worker `worker` of a generator running as several processes writes its segments: a folder of its own
    in the columnar log's (two writers never share a segment's numbers)."""
    return str(Path(path) / f"{WORKER_PREFIX}{worker:02d}")


def ack_folders(folder: Path) -> list[Path]:
    """The folders of a columnar ack log holding segments: its own (the canaries', a single generator's) and each
    worker's, in worker order."""
    workers = sorted(
        p for p in Path(folder).glob(f"{WORKER_PREFIX}*") if p.is_dir() and p.name[len(WORKER_PREFIX) :].isdigit()
    )
    return [Path(folder), *workers]


def ack_batch(lines: list[tuple]) -> pa.RecordBatch:
    """Ack-log lines (ACK_LOG_COLUMNS; "" where a partition or offset is unknown) as a batch of the columnar form."""
    columns = zip(*lines) if lines else ([],) * len(ACK_LOG_COLUMNS)
    kinds = ACK_TYPES.values()
    arrays = [pa.array([None if v == "" else v for v in values], kind) for values, kind in zip(columns, kinds)]
    return pa.RecordBatch.from_arrays(arrays, names=list(ACK_LOG_COLUMNS))


RESEND_LINE = b",1"  # the end of a line the resend fault wrote (its last column, `resend`, is 1)


class AckCounter:
    """Acknowledged and unknown-outcome records so far (see ACK_LOG_COLUMNS); an aborted line is neither (its
    record is written again), nor a resend's line (a copy of a record counted already)."""

    def __init__(self, path: Path):
        self._folder = Path(path) if columnar_ack_log(path) else None
        self._tail = LineTail(path) if self._folder is None else None
        self._header_seen = False
        # per folder of segments: acked, unknown, segments counted (those before the one being written)
        self._closed: dict[Path, tuple[int, int, int]] = {}
        self.acked = 0
        self.unknown = 0

    def poll(self) -> "AckCounter":
        if self._folder is not None:
            return self._poll_segments()
        lines = self._tail.new_lines()
        if lines and not self._header_seen:
            lines, self._header_seen = lines[1:], True
        lines = [line for line in lines if not line.endswith(RESEND_LINE)]  # a copy sent again, not a record
        acked = sum(1 for line in lines if b",acked," in line)
        aborted = sum(1 for line in lines if b",aborted," in line)
        self.acked += acked
        self.unknown += len(lines) - acked - aborted
        return self

    def _poll_segments(self) -> "AckCounter":
        self.acked = self.unknown = 0
        for folder in ack_folders(self._folder) if self._folder.is_dir() else []:
            found = segments(folder)
            acked, unknown, counted = self._closed.get(folder, (0, 0, 0))
            for index in range(counted, len(found)):
                table, _ = read_segment(found[index], ["status", "resend"])
                here = _outcomes(table) if table is not None else (0, 0)
                acked, unknown = acked + here[0], unknown + here[1]
                if index < len(found) - 1:  # a writer never goes back to a segment once it opened the next
                    self._closed[folder] = (acked, unknown, index + 1)
            self.acked, self.unknown = self.acked + acked, self.unknown + unknown
        return self


def _outcomes(table) -> tuple[int, int]:
    """(acknowledged, unknown outcome) lines of a segment, but for a resend's copies and aborted lines."""
    original = pc.equal(table["resend"], 0) if "resend" in table.column_names else None
    status = table["status"] if original is None else table["status"].filter(original)
    acked = pc.sum(pc.equal(status, "acked")).as_py() or 0
    aborted = pc.sum(pc.equal(status, "aborted")).as_py() or 0
    return acked, len(status) - acked - aborted
