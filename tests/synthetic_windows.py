"""Synthetic run directories of a windowed count, in the real evidence format (columnar), with late records and
replayed batches placed on purpose.

The pipeline ingress -> counter -> egress: the ingress copies the source to `ingested` (its replayed batches
written again right after themselves), the counter counts each key's records per tumbling event-time window behind
a watermark (as the `windowed-count` streamlet: a batch drops the records whose window ended at or before the
watermark of the batches before it) and writes each window once the watermark passes its end to `counts`, which
the window egress stores (its audit and its state). Used by bench/check_scale.py's windowed profile; everything
the checker must find follows from the indices used here (`WindowedRun`), never from the checker.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from contract.egress import WINDOW_AUDIT, WINDOW_STATE, WINDOWS
from harness.evidence.description import PipelineDescription, StreamletDescription
from harness.scenario.parse import parse_scenario
from tests.synthetic_run import Flow, Sent, _batches, _batches_json, _key_text, _write_acks, _write_segments, offsets

WINDOW_MS = 10_000
WATERMARK_MS = 10_000  # the counter's watermark delay
COUNTER_ROWS = 50_000  # records of `ingested` a counter batch reads, by default


@dataclass(frozen=True)
class WindowedRun:
    """What was written, for a test or a bench to count from: per copy in `ingested`, whether the counter dropped
    it behind the watermark; the windows stored (key number, start, count); the counter's final watermark."""

    ingested: np.ndarray  # indices into the sent records, one per copy, in delivery order
    dropped: np.ndarray  # bool per copy of `ingested`
    windows: tuple[np.ndarray, np.ndarray, np.ndarray]  # key, window_start_ms, count of each window stored
    final_watermark_ms: int


def _scenario() -> dict:
    return {
        "name": "synthetic-windows",
        "description": "synthetic evidence of a windowed count",
        "evidence": {"recordings": "columnar"},
        "blueprint": {
            "streamlets": {
                "ingress": {"kind": "ingress"},
                "counter": {
                    "kind": "windowed-count",
                    "settings": {"window": f"{WINDOW_MS // 1000} seconds", "watermark": "10 seconds"},
                },
                "egress": {"kind": "window-egress"},
            },
            "connections": {"ingress.out": ["counter.in"], "counter.out": ["egress.in"]},
            "topics": {
                "ingress.out": {"name": "ingested", "partitions": 2},
                "counter.out": {"name": "counts", "partitions": 2},
            },
        },
        "workload": {"topic": {"name": "source", "partitions": 2}, "keys": 4, "rate": 10, "duration_s": 10},
    }


def _describe(scenario: dict) -> PipelineDescription:
    parsed = parse_scenario(scenario)
    settings = {name: s.settings for name, s in parsed.blueprint.streamlets.items()}
    window = f"{WINDOW_MS // 1000} seconds"
    return PipelineDescription(
        parsed.name,
        parsed.description,
        "source",
        (
            StreamletDescription("ingress", "ingress", "ingress", settings["ingress"], ("source",), ("ingested",)),
            StreamletDescription(
                "counter",
                "windowed-count",
                "processor",
                settings["counter"],
                ("ingested",),
                ("counts",),
                drops_late_events=True,
                window=window,
            ),
            StreamletDescription(
                "egress", "window-egress", "egress", settings["egress"], ("counts",), (), egress_evidence=WINDOWS
            ),
        ),
        parsed.expectations,
    )


def _counted(sent: Sent, ingested: np.ndarray, rows: int) -> tuple[np.ndarray, list[dict], int]:
    """The counter's batches over `ingested` (`rows` copies each): which copies each drops, its progress events,
    the final watermark."""
    partition = sent.partition[ingested]
    event = sent.event_time_ms[ingested]
    firsts = np.arange(0, len(ingested), rows)
    batch = np.arange(len(ingested)) // rows
    highest = np.maximum.accumulate(np.maximum.reduceat(event, firsts)) if len(firsts) else np.zeros(0, np.int64)
    watermark = highest - WATERMARK_MS  # after each batch
    filtering = np.concatenate([[0], watermark[:-1]])  # a batch filters with the watermark of the batches before it
    dropped = event // WINDOW_MS * WINDOW_MS + WINDOW_MS <= filtering[batch]
    # each partition's offsets read by the end of each batch: its copies so far (offsets follow delivery order)
    ends = {p: np.cumsum(np.add.reduceat((partition == p).astype(np.int64), firsts)) for p in (0, 1)}
    drops = np.add.reduceat(dropped.astype(np.int64), firsts) if len(firsts) else []
    events = []
    for b in range(len(firsts)):
        start, end = ({str(p): int(ends[p][i]) if i >= 0 else 0 for p in (0, 1)} for i in (b - 1, b))
        progress = {
            "batchId": b,
            "numInputRows": int(min(rows, len(ingested) - firsts[b])),
            "sources": [{"startOffset": {"ingested": start}, "endOffset": {"ingested": end}}],
            "eventTime": {"watermark": _iso(int(watermark[b]))},
            "stateOperators": [{"numRowsDroppedByWatermark": int(drops[b])}],
        }
        events.append({"ts_ms": int(highest[b]) + 1000, "event": "progress", "progress": progress})
    return dropped, events, int(watermark[-1]) if len(firsts) else 0


def _iso(ms: int) -> str:
    return np.datetime64(ms, "ms").astype(str) + "Z"


def write_windowed_run(root: Path, sent: Sent, ingested: np.ndarray, counter_rows: int = COUNTER_ROWS) -> WindowedRun:
    """A run directory of the windowed pipeline: `ingested` the copies the ingress wrote, in order (indices into
    `sent`); the counter reads them `counter_rows` a batch and counts every copy it does not drop (a copy of a replay
    counts again: over-counted), and the egress stores each window whose end the final watermark passed."""
    root = Path(root)
    for folder in ("streamlets", "topics", "egress", "progress"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    scenario = _scenario()
    (root / "scenario.json").write_text(json.dumps({"resolved": {"seed": 1}, "scenario": scenario}))
    _describe(scenario).save(root / "pipeline.json")
    (root / "run.json").write_text(json.dumps({"status": "complete"}))
    (root / "history.jsonl").write_text("")
    _write_acks(root / "acks.csv", sent, columnar=True)
    flow = Flow({"ingested": ingested}, np.array([], np.int64), np.array([], np.int64))
    _write_segments(root / "topics" / "ingested", sent, flow, ingested, {"ingress": _batches(len(ingested))})

    dropped, events, final = _counted(sent, ingested, counter_rows)
    counted = ingested[~dropped]
    key = sent.key[counted]
    start = sent.event_time_ms[counted] // WINDOW_MS * WINDOW_MS
    first = int(start.min(initial=0))
    span = int(start.max(initial=0) - first) // WINDOW_MS + 1
    cells, count = np.unique(key * span + (start - first) // WINDOW_MS, return_counts=True)
    key, start = cells // span, first + cells % span * WINDOW_MS
    due = start + WINDOW_MS <= final  # emitted once the watermark passed its end
    windows = (key[due], start[due], count[due])
    _write_windows(root, *windows)
    for name in ("ingress", "counter", "egress"):
        lines = events if name == "counter" else []
        (root / "progress" / f"{name}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in lines))
    return WindowedRun(ingested, dropped, windows, final)


def _write_windows(root: Path, key: np.ndarray, start: np.ndarray, count: np.ndarray) -> None:
    """Each window emitted once: the `counts` topic's recording, and the egress's audit and state."""
    import adbc_driver_sqlite.dbapi as adbc

    from contract.segments import SegmentWriter
    from harness.evidence.topics import BATCH_PREFIX

    n = len(key)
    partition = key % 2
    offset = offsets(partition)
    batch = (start // WINDOW_MS).astype(np.int64)  # emitted by the batch that moved the watermark past it
    written = start + WINDOW_MS + WATERMARK_MS + 1000
    keys = _key_text(key)
    with SegmentWriter(root / "topics" / "counts") as writer:
        writer.write(
            pa.table(
                {
                    "partition": pa.array(partition, pa.int32()),
                    "offset": offset,
                    "timestamp_ms": written,
                    "key": keys,
                    "seq": pa.nulls(n, pa.int64()),
                    "seq_text": pa.nulls(n, pa.string()),
                    "count": count,
                    BATCH_PREFIX + "counter": pa.array(batch, pa.int32()),
                }
            )
        )
    stamps = _batches_json({"counter": batch}, slice(None))
    audit = {
        "key": keys,
        "window_start_ms": start,
        "count": count,
        "batch_id": batch,
        "kafka_partition": partition,
        "kafka_offset": offset,
        "received_ms": written + 200,
        "batches": stamps,
    }
    with adbc.connect(str(root / "egress" / "egress.sqlite")) as conn:
        with conn.cursor() as cursor:
            cursor.adbc_ingest(WINDOW_AUDIT, pa.table(audit), mode="create")
            state = {"key": keys, "window_start_ms": start, "count": count, "batch_id": batch}
            cursor.adbc_ingest(WINDOW_STATE, pa.table(state), mode="create")
        conn.commit()
