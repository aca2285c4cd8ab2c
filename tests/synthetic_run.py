"""Synthetic run directories in the real evidence format, with anomalies placed on purpose.

Used by the checker's property tests and by bench/check_scale.py. A pipeline
ingress -> processor -> egress over topics `ingested` and `processed`, the egress
a SQLite store; or (`output_topic`) ingress -> processor -> writer, whose output
topic is the egress (a Kafka egress: its recording is the egress's evidence).
Every table is built with numpy and written with Arrow (CSV, JSON lines through
vectorized string joins, SQLite through ADBC), so millions of records are cheap.

A `Flow` says, per hop, which records arrive and in what order (indices into
the sent records, one entry per copy); the test derives what the checker must
find from the same indices it used to inject anomalies, never from the checker.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from contract.applications import FULLY, KAFKA_OUTPUT
from contract.egress import TOPIC
from harness.evidence.description import PipelineDescription, StreamletDescription
from harness.scenario.parse import parse_scenario

T0 = 1_800_000_000_000  # ms
HOPS = ("ingested", "processed")
BATCH = 50  # records per batch of every streamlet
WRITER = "writer"  # the streamlet writing the output topic, when the egress is one


@dataclass
class Sent:
    key: np.ndarray  # int key number
    seq: np.ndarray
    partition: np.ndarray
    offset: np.ndarray  # -1: the producer reported none (written empty, as the generator writes it)
    event_time_ms: np.ndarray
    late: np.ndarray  # bool
    acked: np.ndarray  # bool
    aborted: np.ndarray | None = None  # per record, copies written in aborted transactions (acks.csv `aborted` lines)
    resent: np.ndarray | None = None  # per record, copies sent again on purpose (acks.csv lines with resend 1)

    def __len__(self) -> int:
        return len(self.seq)


@dataclass
class Flow:
    """Indices into Sent (one per copy, in delivery order); phantoms are indices >= len(sent) into `phantom`."""

    topics: dict[str, np.ndarray]
    audit: np.ndarray
    state: np.ndarray
    phantom_key: np.ndarray = field(default_factory=lambda: np.array([], np.int64))
    phantom_seq: np.ndarray = field(default_factory=lambda: np.array([], np.int64))
    # per topic, ms added to each copy's write time (its timestamp: by default 100 ms after its event time)
    delays: dict[str, np.ndarray] = field(default_factory=dict)
    # per topic, the copies its recording never saw (a mask over its copies: their offsets stay taken; columnar only)
    unrecorded: dict[str, np.ndarray] = field(default_factory=dict)


def make_sent(keys: int, per_key: int, partitions: int = 2, seed: int = 0) -> Sent:
    """Records sent round-robin over keys; a key always lands on the same partition, offsets in order."""
    n = keys * per_key
    key = np.tile(np.arange(keys), per_key)
    seq = np.repeat(np.arange(per_key), keys)
    partition = key % partitions
    event_time = T0 + np.arange(n) * 5
    return Sent(key, seq, partition, offsets(partition), event_time, np.zeros(n, bool), np.ones(n, bool))


def offsets(partition: np.ndarray) -> np.ndarray:
    """Each row's offset in its partition, the rows written in their order."""
    offset = np.zeros(len(partition), dtype=np.int64)
    for p in np.unique(partition):
        mask = partition == p
        offset[mask] = np.arange(mask.sum())
    return offset


def clean_flow(sent: Sent) -> Flow:
    every = np.arange(len(sent))
    return Flow({hop: every for hop in HOPS}, every, every)


def _key_text(numbers: np.ndarray) -> pa.Array:
    return pc.binary_join_element_wise("k", pc.utf8_lpad(pa.array(numbers).cast(pa.string()), 4, "0"), "")


def _batches(n: int) -> np.ndarray:
    return np.arange(n) // BATCH


def _ids(sent: Sent, flow: Flow, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    real = index < len(sent)
    key = np.where(
        real,
        sent.key[np.minimum(index, len(sent) - 1)],
        flow.phantom_key[np.maximum(index - len(sent), 0)] if len(flow.phantom_key) else 0,
    )
    seq = np.where(
        real,
        sent.seq[np.minimum(index, len(sent) - 1)],
        flow.phantom_seq[np.maximum(index - len(sent), 0)] if len(flow.phantom_seq) else 0,
    )
    return key, seq


def _sources(previous: np.ndarray, current: np.ndarray) -> np.ndarray:
    """For each copy at a hop, the position of the input copy it was made from: the k-th copy of a record here
    comes from its k-th copy upstream, and a copy beyond those (a replay) from its last one; -1 when the record
    is not upstream at all (a phantom)."""
    up = pd.DataFrame({"i": previous, "pos": np.arange(len(previous))})
    up["k"] = up.groupby("i").cumcount()
    last = up.groupby("i").k.max()
    here = pd.DataFrame({"i": current})
    here["k"] = np.minimum(
        here.groupby("i").cumcount().to_numpy(), here.i.map(last).fillna(-1).to_numpy(dtype=np.int64)
    )
    return here.merge(up, on=["i", "k"], how="left").pos.fillna(-1).to_numpy(dtype=np.int64)


def stamps(flow: Flow, writer: str | None = None) -> dict[str, dict[str, np.ndarray]]:
    """The batch stamps each copy carries, hop by hop, as a real pipeline makes them: the stamps of the input copy it
    came from plus its own producer's batch (position // BATCH). The egress's entry holds the stamps it received,
    and with a `writer` (of an output topic) its own too."""
    producers = dict(zip(HOPS, ("ingress", "processor"))) | {"egress": writer}
    found: dict[str, dict[str, np.ndarray]] = {}
    previous, previous_stamps = None, {}
    for hop, index in [*flow.topics.items(), ("egress", flow.audit)]:
        source = _sources(previous, index) if previous is not None else None
        inherited = {
            name: np.where(source >= 0, values[np.maximum(source, 0)], -1) for name, values in previous_stamps.items()
        }
        own = {producers[hop]: _batches(len(index))} if producers[hop] else {}
        found[hop] = inherited | own
        previous, previous_stamps = index, found[hop]
    return found


def _batches_json(stamped: dict[str, np.ndarray], part: slice) -> pa.Array:
    s = lambda a: pa.array(a).cast(pa.string())  # noqa: E731
    pieces = [
        x
        for i, (name, values) in enumerate(stamped.items())
        for x in ((", " if i else "") + f'"{name}": ', s(values[part]))
    ]
    return pc.binary_join_element_wise("{", *pieces, "}", "")


def _iso(ms: np.ndarray) -> pa.Array:
    return pc.strftime(pa.array(ms.astype("datetime64[ms]")), format="%Y-%m-%dT%H:%M:%SZ")


def _placed(sent: Sent, flow: Flow, index: np.ndarray) -> tuple[np.ndarray, ...]:
    """Each copy's key, seq, partition (key % 2), offset (in delivery order) and event time, as a topic holds it."""
    key, seq = _ids(sent, flow, index)
    partition = key % 2
    return key, seq, partition, offsets(partition), sent.event_time_ms[np.minimum(index, len(sent) - 1)]


def _written_ms(event: np.ndarray, delay: np.ndarray | None) -> np.ndarray:
    """When each copy was written (its timestamp): 100 ms after its event time, and its delay."""
    return event + 100 + (0 if delay is None else delay)


def _write_topic(
    path: Path,
    sent: Sent,
    flow: Flow,
    index: np.ndarray,
    stamped: dict[str, np.ndarray],
    slice_rows: int = 1_000_000,
    delay: np.ndarray | None = None,
) -> None:
    """One JSON line per copy: partition, offset (in delivery order), timestamp, key and value with batches."""
    key, seq, partition, offset, event = _placed(sent, flow, index)
    written = _written_ms(event, delay)
    s = lambda a: pa.array(a).cast(pa.string())  # noqa: E731
    with open(path, "wb") as out:
        for start in range(0, len(index), slice_rows):
            part = slice(start, start + slice_rows)
            keys, batches = _key_text(key[part]), _batches_json(stamped, part)
            lines = pc.binary_join_element_wise(
                '{"partition": ',
                s(partition[part]),
                ', "offset": ',
                s(offset[part]),
                ', "timestamp_ms": ',
                s(written[part]),
                ', "key": "',
                keys,
                '", "value": {"key": "',
                keys,
                '", "seq": ',
                s(seq[part]),
                ', "event_time": "',
                _iso(event[part]),
                '", "payload": "x", "batches": ',
                batches,
                "}}\n",
                "",
            )
            joined = pc.binary_join(pa.ListArray.from_arrays(pa.array([0, len(lines)], pa.int32()), lines), "")
            out.write(joined[0].as_buffer())


def _write_segments(
    folder: Path,
    sent: Sent,
    flow: Flow,
    index: np.ndarray,
    stamped: dict[str, np.ndarray],
    slice_rows: int = 1_000_000,
    delay: np.ndarray | None = None,
    header: tuple[str, np.ndarray] | None = None,
) -> None:
    """The same records as _write_topic, in the columnar form (harness/evidence/topics.py); `header`: its name and,
    per copy, whether the copy carries it."""
    from contract.segments import SegmentWriter
    from harness.evidence.topics import BATCH_PREFIX

    key, seq, partition, offset, event = _placed(sent, flow, index)
    written = _written_ms(event, delay)
    unseen = flow.unrecorded.get(folder.name)
    if unseen is not None:
        seen = ~unseen
        key, seq, partition, offset, written, index = (a[seen] for a in (key, seq, partition, offset, written, index))
        stamped = {name: v[seen] for name, v in stamped.items()}
        header = (header[0], header[1][seen]) if header is not None else None
    with SegmentWriter(folder) as writer:
        for start in range(0, len(index), slice_rows):
            part = slice(start, start + slice_rows)
            columns = {
                "partition": pa.array(partition[part], pa.int32()),
                "offset": offset[part],
                "timestamp_ms": written[part],
                "key": _key_text(key[part]),
                "seq": seq[part],
            }
            columns |= {BATCH_PREFIX + name: pa.array(v[part], pa.int32()) for name, v in stamped.items()}
            if header is not None:
                name, carried = header
                entries = [[(name, "1")] if c else [] for c in carried[part].tolist()]
                columns["headers"] = pa.array(entries, pa.map_(pa.string(), pa.string()))
            writer.write(pa.table(columns))


def _write_acks(path: Path, sent: Sent, slice_rows: int = 2_000_000, columnar: bool = False) -> None:
    """acks.csv as the generator writes it (`columnar`: its segments in the folder acks/); with a `resend` column
    only when some record was sent again (a log without it is read as one without resends)."""
    from contract.segments import SegmentWriter

    writer = schema = None

    def make_writer(schema: pa.Schema):
        if not columnar:
            return pacsv.CSVWriter(path, schema)
        return SegmentWriter(path.with_suffix(""))

    def resend(zeros: np.ndarray) -> dict:
        return {"resend": zeros} if sent.resent is not None else {}

    for start in range(0, max(len(sent), 1), slice_rows):
        part = slice(start, start + slice_rows)
        table = pa.table(
            {
                "key": _key_text(sent.key[part]),
                "seq": sent.seq[part],
                "event_time_ms": sent.event_time_ms[part],
                "late": sent.late[part].astype(np.int8),
                "status": pa.array(np.where(sent.acked[part], "acked", "unknown")),
                "partition": sent.partition[part],
                "offset": pa.array(sent.offset[part], mask=sent.offset[part] < 0),
                **resend(np.zeros(len(sent.seq[part]), np.int8)),
            }
        )
        writer, schema = writer or make_writer(table.schema), table.schema
        writer.write(table) if columnar else writer.write_table(table)
    # More lines for some records: copies in aborted transactions, copies sent again on purpose (resend 1).
    for copies, status, first_offset, flag in (
        (sent.aborted, "aborted", 1_000_000, 0),
        (sent.resent, "acked", 2_000_000, 1),
    ):
        records = np.flatnonzero(copies) if copies is not None else []
        if not len(records):
            continue
        index = np.repeat(records, copies[records])
        more = pa.table(
            {
                "key": _key_text(sent.key[index]),
                "seq": sent.seq[index],
                "event_time_ms": sent.event_time_ms[index],
                "late": np.zeros(len(index), np.int8),
                "status": pa.array([status] * len(index)),
                "partition": sent.partition[index],
                "offset": np.arange(len(index)) + first_offset,
                **resend(np.full(len(index), flag, np.int8)),
            },
            schema=schema,
        )
        writer.write(more) if columnar else writer.write_table(more)
    writer.close()


def _describe(
    scenario: dict, egress_settings: dict, deduplicates_within_s: float | None, output_topic: str | None
) -> PipelineDescription:
    """What the runner writes for this scenario (harness.runner.pipeline_run.PipelineRun.describe); with an
    `output_topic`, a writer streamlet writes it and the egress is its recording (an application's Kafka output)."""
    parsed = parse_scenario(scenario)
    streamlets = (
        StreamletDescription(
            "ingress", "ingress", "ingress", {}, ("source",), ("ingested",), deduplicates_within_s=deduplicates_within_s
        ),
        StreamletDescription(
            "processor", "processor", "processor", {"crash_probability": 0.0}, ("ingested",), ("processed",)
        ),
    )
    if output_topic:
        identity = {"key": "key", "seq": "seq"}
        streamlets += (
            StreamletDescription(WRITER, "processor", "processor", {}, ("processed",), (output_topic,)),
            StreamletDescription(
                "egress",
                KAFKA_OUTPUT,
                "egress",
                {"topic": output_topic, "identity": identity},
                (output_topic,),
                (),
                egress_evidence=TOPIC,
                identity=identity,
                observed=FULLY,
            ),
        )
    else:
        streamlets += (
            StreamletDescription(
                "egress",
                "egress",
                "egress",
                parsed.blueprint.streamlets["egress"].settings,
                ("processed",),
                (),
                drops_late_events=egress_settings["mode"] == "dedup",
                egress_evidence="records",
                audit_query="audit" if egress_settings["mode"] == "dedup" else "main",
            ),
        )
    return PipelineDescription(parsed.name, parsed.description, "source", streamlets, parsed.expectations)


def write_run(
    root: Path,
    sent: Sent,
    flow: Flow,
    *,
    mode: str = "upsert",
    history: list[dict] | None = None,
    progress: dict[str, list[dict]] | None = None,
    expectations: dict | None = None,
    ingress_deduplicates_s: float | None = None,
    recordings: str = "json",
    output_topic: str | None = None,
    header: tuple[str, dict[str, np.ndarray]] | None = None,
) -> Path:
    """A run directory of the three-streamlet pipeline; `ingress_deduplicates_s`: the ingress declares a
    deduplication within that many seconds (as an application's `deduplicates`); `recordings`: the topics recorded
    as JSON lines (json) or segments (columnar, the egress's audit and the acknowledgement log too);
    `output_topic`: the egress is that Kafka topic, which a writer streamlet fills with the audit's copies (the
    flow's state is not used: a topic keeps every copy); `header`: the header every source record carries
    (pipeline.json source_header) and, per intermediate topic, whether each copy still carries it (columnar)."""
    root = Path(root)
    for folder in ("streamlets", "topics", "egress", "progress"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    egress_settings = {"mode": mode} | ({"dedup_watermark": "10 seconds"} if mode == "dedup" else {})
    scenario = {
        "name": "synthetic",
        "description": "synthetic evidence",
        "blueprint": {
            "streamlets": {
                "ingress": {"kind": "ingress"},
                "processor": {"kind": "processor"},
                "egress": {"kind": "egress", "settings": egress_settings},
            },
            "connections": {"ingress.out": ["processor.in"], "processor.out": ["egress.in"]},
            "topics": {
                "ingress.out": {"name": "ingested", "partitions": 2},
                "processor.out": {"name": "processed", "partitions": 2},
            },
        },
        "workload": {"topic": {"name": "source", "partitions": 2}, "keys": 4, "rate": 10, "duration_s": 10},
        "expectations": expectations or {},
    }
    (root / "scenario.json").write_text(json.dumps({"resolved": {"seed": 1}, "scenario": scenario}))
    description = _describe(scenario, egress_settings, ingress_deduplicates_s, output_topic)
    replace(description, source_header=header[0] if header else None).save(root / "pipeline.json")
    (root / "run.json").write_text(json.dumps({"status": "complete"}))
    wiring = {
        "ingress": ({}, {"out": "ingested"}, "source"),
        "processor": ({"in": "ingested"}, {"out": "processed"}, None),
        "egress": ({"in": "processed"}, {}, None),
    }
    if output_topic:
        wiring |= {
            WRITER: ({"in": "processed"}, {"out": output_topic}, None),
            "egress": ({"in": output_topic}, {}, None),
        }
    for name, (inputs, outputs, source) in wiring.items():
        settings = egress_settings if name == "egress" else {}
        (root / "streamlets" / f"{name}.json").write_text(
            json.dumps(
                {
                    "name": name,
                    "settings": settings,
                    "inputs": inputs,
                    "outputs": outputs,
                    "source_topic": source,
                    "source": {"fail_on_data_loss": True},
                }
            )
        )
    _write_acks(root / "acks.csv", sent, columnar=recordings == "columnar")
    stamped = stamps(flow, WRITER if output_topic else None)
    recorded = [(hop, flow.topics[hop], stamped[hop]) for hop in HOPS]
    for topic, index, stamp in recorded + ([(output_topic, flow.audit, stamped["egress"])] if output_topic else []):
        delay = flow.delays.get(topic)
        if recordings == "columnar":
            carried = (header[0], header[1][topic]) if header and topic in header[1] else None
            _write_segments(root / "topics" / topic, sent, flow, index, stamp, delay=delay, header=carried)
        else:
            _write_topic(root / "topics" / f"{topic}.jsonl", sent, flow, index, stamp, delay=delay)
    if not output_topic:
        audit = root / "egress" / "egress.audit" if recordings == "columnar" else None
        _write_egress(root / "egress" / "egress.sqlite", sent, flow, mode, stamped["egress"], audit_folder=audit)
    (root / "history.jsonl").write_text("".join(json.dumps(e) + "\n" for e in (history or [])))
    for name in wiring:
        (root / "progress" / f"{name}.jsonl").write_text(
            "".join(json.dumps(e) + "\n" for e in (progress or {}).get(name, []))
        )
    return root


def _write_egress(
    path: Path,
    sent: Sent,
    flow: Flow,
    mode: str,
    stamped: dict[str, np.ndarray],
    slice_rows: int = 2_000_000,
    audit_folder: Path | None = None,
) -> None:
    """The egress's SQLite store: its audit table, or with `audit_folder` the audit's segments there (columnar, as
    pipelines/audit.py writes them), and its state."""
    import adbc_driver_sqlite.dbapi as adbc

    from contract.segments import SegmentWriter

    key, seq = _ids(sent, flow, flow.audit)
    n = len(flow.audit)
    event = sent.event_time_ms[np.minimum(flow.audit, len(sent) - 1)]
    batch = _batches(n)
    skey, sseq = _ids(sent, flow, flow.state)
    path.unlink(missing_ok=True)
    with adbc.connect(str(path)) as conn:
        with conn.cursor() as cursor:
            query = "audit" if mode == "dedup" else "main"
            for start in range(0, max(n, 1), slice_rows):
                part = slice(start, start + slice_rows)
                m = len(batch[part])
                rows = {
                    "batch_id": batch[part],
                    "key": _key_text(key[part]),
                    "seq": seq[part],
                    "event_time_ms": event[part],
                    "batches": _batches_json(stamped, part),
                    "topic": pa.array(np.full(m, "processed")),
                    "kafka_partition": key[part] % 2,
                    "kafka_offset": np.arange(start, start + m),
                    "received_ms": event[part] + 500 + (np.arange(m) % 7) * 10,
                }
                if audit_folder is not None:
                    names = {"kafka_partition": "partition", "kafka_offset": "offset"}
                    columns = {names.get(c, c): v for c, v in rows.items()}
                    columns["partition"] = pa.array(columns["partition"], pa.int32())
                    with SegmentWriter(audit_folder / query) as writer:
                        writer.write(pa.table(columns))
                    continue
                cursor.adbc_ingest(
                    "audit",
                    pa.table({"query": pa.array(np.full(m, query)), **rows}),
                    mode="create" if start == 0 else "append",
                )
            state_batch = _batches(len(flow.state))
            for start in range(0, max(len(flow.state), 1), slice_rows):
                part = slice(start, start + slice_rows)
                cursor.adbc_ingest(
                    "records",
                    pa.table({"key": _key_text(skey[part]), "seq": sseq[part], "batch_id": state_batch[part]}),
                    mode="create" if start == 0 else "append",
                )
        conn.commit()
