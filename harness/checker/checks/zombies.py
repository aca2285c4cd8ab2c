"""Two drivers on one checkpoint (zombie-driver, harness/faults/kinds/zombie_driver.py): which driver wrote which copy
of what reached the topics the target writes. The brokers gave each driver's Kafka producer an id of its own, and
producers.csv names the producer of every batch: ids that wrote before the freeze are the zombie's, ids first seen
while it was frozen the second driver's, ids first seen after it was thawed either's. Each copy in the run's
recording is placed in its batch by its offset. A copy the zombie wrote after it was thawed, of a record the second
driver wrote too, is a duplicate the zombie made. A table or file output does not record its writer: said so.
From the history, producers.csv and the recordings; said only of a run with a zombie-driver fault."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from contract.egress import TOPIC
from harness.checker.producers import run_producers
from harness.checker.section import Section
from harness.checker.step import Context, Step
from harness.evidence.history import PROCESS_RESUMED, PROCESS_STARTED, faults_begun

KIND_NAME = "zombie-driver"
ZOMBIE, SECOND, THAWED, EITHER, UNPLACED = "zombie", "second", "zombie-thawed", "either", "unplaced"
HEADER = (
    "fault",
    "streamlet",
    "topic",
    "copies",
    "by the zombie before its freeze",
    "by the second driver",
    "by the zombie after its thaw",
    "either",
    "unplaced",
    "records both wrote",
    "duplicates the zombie made after its thaw",
)
SHOWN = 5


@dataclass(frozen=True)
class Zombie:
    """One zombie-driver fault's moments (ms): the freeze, the second driver's start, the thaw."""

    number: int
    target: str
    frozen_ms: int
    second_ms: int | None
    thawed_ms: int | None


def zombies(history: list[dict]) -> list[Zombie]:
    found = []
    for event, later in faults_begun(history, KIND_NAME):
        process = f"streamlet-{event['target']}"
        second = next(
            (e["ts_ms"] for e in later if e.get("event") == PROCESS_STARTED and e.get("process") == process), None
        )
        thawed = next(
            (
                e["ts_ms"]
                for e in later
                if e.get("event") == PROCESS_RESUMED and e.get("process") == f"{process}-zombie"
            ),
            None,
        )
        found.append(Zombie(event.get("fault", 0), event["target"], event["ts_ms"], second, thawed))
    return found


def drivers_of(batches: pd.DataFrame, zombie: Zombie) -> dict[int, str]:
    """Each producer id of a topic's batches: the zombie's (it wrote before the freeze), the second driver's (first
    seen while the zombie was frozen), or either's (first seen after the thaw)."""
    first = batches.groupby("producer_id").base_ms.min()
    before = set(batches.producer_id[batches.max_ms < zombie.frozen_ms])
    thawed = zombie.thawed_ms if zombie.thawed_ms is not None else np.inf
    return {
        int(pid): ZOMBIE if pid in before else SECOND if zombie.frozen_ms <= at < thawed else EITHER
        for pid, at in first.items()
    }


def place(copies: pd.DataFrame, batches: pd.DataFrame) -> np.ndarray:
    """The producer id of each copy (partition, offset) from its topic's batches; -1 where no batch holds it."""
    found = np.full(len(copies), -1, np.int64)
    for partition, mine in batches.groupby("partition"):
        mine = mine.sort_values("base_offset")
        at = np.flatnonzero(copies.partition.to_numpy() == partition)
        offsets = copies.offset.to_numpy()[at]
        index = np.searchsorted(mine.base_offset.to_numpy(), offsets, side="right") - 1
        inside = (index >= 0) & (offsets <= mine.last_offset.to_numpy()[np.maximum(index, 0)])
        found[at[inside]] = mine.producer_id.to_numpy()[index[inside]]
    return found


def attribute(copies: pd.DataFrame, batches: pd.DataFrame, zombie: Zombie) -> pd.Series:
    """Who wrote each copy: ZOMBIE before the freeze, SECOND, THAWED (the zombie after its thaw), EITHER, or UNPLACED
    (no batch of producers.csv holds its offset)."""
    owners = drivers_of(batches, zombie)
    producer = place(copies, batches)
    thawed = zombie.thawed_ms if zombie.thawed_ms is not None else np.inf
    written = copies.timestamp_ms.to_numpy()
    who = np.array([owners.get(int(p), UNPLACED) if p >= 0 else UNPLACED for p in producer], object)
    who[(who == ZOMBIE) & (written >= thawed)] = THAWED
    return pd.Series(who, index=copies.index)


def _copies(context: Context, topic: str) -> pd.DataFrame | None:
    """Every copy a topic holds (partition, offset, timestamp_ms, rid): an intermediate topic's recording, or the
    deliveries of the Kafka output reading it (None: neither)."""
    evidence = context.evidence
    if topic in evidence.topics:
        return evidence.topics[topic]
    readers = {s.name for s in evidence.pipeline.streamlets if s.egress_evidence == TOPIC and topic in s.inputs}
    egress = next((e for e in evidence.egresses if e.name in readers), None)
    return None if egress is None else egress.audit.rename(columns={"received_ms": "timestamp_ms"})


def _rows(context: Context, zombie: Zombie, producers: pd.DataFrame) -> tuple[list[tuple], list[str], dict]:
    pipeline, rows, lines, data = context.evidence.pipeline, [], [], {}
    target = next(s for s in pipeline.streamlets if s.name == zombie.target)
    for topic in target.outputs:
        copies = _copies(context, topic)
        batches = producers[producers.topic == topic]
        if copies is None or batches.empty:
            lines.append(f"{topic}: which driver wrote each copy is unknown (no recording or no batch of it)")
            continue
        who = attribute(copies, batches, zombie)
        counted = who.value_counts()
        seen = copies.assign(who=who).groupby("rid").who.agg(set)
        made = seen[seen.map(lambda s: THAWED in s and len(s) > 1)]
        both = seen[seen.map(lambda s: SECOND in s and bool(s & {ZOMBIE, THAWED}))]
        data[topic] = {k: int(counted.get(k, 0)) for k in (ZOMBIE, SECOND, THAWED, EITHER, UNPLACED)}
        data[topic] |= {"both": len(both), "duplicates_made": len(made)}
        rows.append((zombie.number, zombie.target, topic, len(copies), *data[topic].values()))
        if len(made):
            names = ["{}/{}".format(*context.evidence.ids.name(int(r))) for r in made.index[:SHOWN]]
            lines.append(f"{topic}: written again by the zombie after its thaw: {', '.join(names)}")
    for output in (s for s in pipeline.streamlets if s.written_by == zombie.target):
        lines.append(f"output {output.name}: which driver wrote each row is unknown (a table does not record it)")
    if target.egress_evidence is not None:
        lines.append(f"{target.name}: which driver wrote each row of its store is unknown (not recorded there)")
    return rows, lines, data


def _section(context: Context) -> Section | None:
    found = zombies(context.evidence.history)
    if not found:
        return None
    producers = run_producers(context, "the zombie's writes not told")
    if producers is None:
        return None
    rows, lines, data = [], [], {}
    for zombie in found:
        mine, said, counted = _rows(context, zombie, producers)
        rows += mine
        lines += said
        data[str(zombie.number)] = counted
    lines.insert(
        0, "each copy on the topics a zombie-driver target writes, by the driver whose Kafka producer wrote it"
    )
    return Section("Two drivers", tuple(lines), HEADER, tuple(rows), data=data)


KIND = Step("zombies", section=_section)
