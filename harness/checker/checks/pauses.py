"""A paused driver (pause-driver, harness/faults/kinds/pause_driver.py): the timeouts its pause outlasted, at the
values the job's own Kafka producer logged as it was created ("ProducerConfig values", in its driver's log:
harness/spark/log4j2.properties) or, where it logged none, at Kafka's defaults; the brokers' view of its producers
(producers.csv): whether the ids that wrote its topics before the freeze wrote again after the thaw, under which
epoch, and any transaction marker a coordinator wrote for them while it was frozen; and what its log said of Kafka
after the thaw, in its own words. From the history, producers.csv and the driver's log; said only of a run with a
pause-driver fault, and judged nowhere: what the pause did to the records the records' verdict says."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pandas as pd

from harness.checker.producers import run_producers
from harness.checker.section import Section
from harness.checker.step import Context, Step
from harness.evidence.history import FAULT_ENDED, PROCESS_PAUSED, PROCESS_RESUMED, faults_begun
from harness.evidence.layout import RunLayout

KIND_NAME = "pause-driver"
# A Kafka producer's timeouts that a frozen driver may outlast: Kafka's default (ms), and what happens once outlasted.
TIMEOUTS = {
    "request.timeout.ms": (30_000, "a request in flight expires: the producer retries its batch"),
    "transaction.timeout.ms": (60_000, "the coordinator aborts the open transaction and fences it"),
    "delivery.timeout.ms": (120_000, "records not yet acknowledged expire: the write fails"),
    "connections.max.idle.ms": (540_000, "idle connections are closed (the broker closes its side after 10 min)"),
}
_SETTING = re.compile(r"^\t([a-z0-9.]+) = (.*?)\s*$")
_CONFIGS = re.compile(r"ProducerConfig values:")
# What a Kafka client logs when it meets its own timeouts or the broker's view of it after a pause.
SAID = re.compile(
    r"TimeoutException|Expiring \d+ record|ProducerFenced|InvalidProducerEpoch|OutOfOrderSequence|UnknownProducerId|"
    r"Disconnecting from node|Connection to node -?\d+ .* (could not|disconnected)"
)
SHOWN = 3
HEADER = (
    "fault",
    "streamlet",
    "paused (s)",
    "timeouts outlasted",
    "producers before",
    "batches written while frozen",
    "kept after the thaw",
    "new after the thaw",
    "markers while frozen",
    "driver after",
)


@dataclass(frozen=True)
class Pause:
    """One pause-driver fault: its target, the freeze and thaw (ms), the driver's log size at the thaw, its end."""

    number: int
    target: str
    paused_ms: int
    resumed_ms: int | None
    log_bytes: int | None
    running: bool | None


def pauses(history: list[dict]) -> list[Pause]:
    found = []
    for event, later in faults_begun(history, KIND_NAME):
        process = f"streamlet-{event['target']}"
        paused = next((e for e in later if e.get("event") == PROCESS_PAUSED and e.get("process") == process), event)
        resumed = next((e for e in later if e.get("event") == PROCESS_RESUMED and e.get("process") == process), {})
        ended = next(
            (
                e
                for e in later
                if e.get("event") == FAULT_ENDED and (e.get("kind"), e.get("target")) == (KIND_NAME, event["target"])
            ),
            {},
        )
        found.append(
            Pause(
                event.get("fault", 0),
                event["target"],
                paused["ts_ms"],
                resumed.get("ts_ms"),
                resumed.get("log_bytes"),
                ended.get("running"),
            )
        )
    return found


def client_settings(log: str) -> dict[str, str]:
    """The settings of the first producer's configuration a driver's log holds (none: {})."""
    lines = log.splitlines()
    start = next((i for i, line in enumerate(lines) if _CONFIGS.search(line)), len(lines))
    found: dict[str, str] = {}
    for setting in lines[start + 1 :]:
        pair = _SETTING.match(setting)
        if not pair:
            break
        found[pair.group(1)] = pair.group(2)
    return found


def outlasted(paused_ms: int, settings: dict[str, str]) -> list[tuple[str, int, bool, str]]:
    """The timeouts a pause of `paused_ms` outlasts, shortest first: name, value, whether the job set it, effect."""
    found = []
    for name, (default, effect) in TIMEOUTS.items():
        value = settings.get(name, "")
        ms = int(value) if value.isdigit() else default
        if paused_ms > ms:
            found.append((name, ms, value.isdigit(), effect))
    return sorted(found, key=lambda item: item[1])


def broker_view(batches: pd.DataFrame, pause: Pause) -> dict:
    """The producers that wrote `batches` before the freeze; data batches stamped while it was frozen; the ids of
    those that wrote after the thaw, kept or new, with their epochs; the markers written for them while frozen."""
    thawed = pause.resumed_ms if pause.resumed_ms is not None else pause.paused_ms
    data, markers = batches[batches.control == ""], batches[batches.control != ""]
    before = set(data.producer_id[data.max_ms < pause.paused_ms])
    after = data[data.base_ms >= thawed]
    frozen = data[(data.base_ms >= pause.paused_ms) & (data.base_ms < thawed)]
    during = markers[markers.producer_id.isin(before) & markers.base_ms.between(pause.paused_ms, thawed)]
    epochs = after.groupby("producer_id").producer_epoch.max()
    return {
        "before": sorted(int(p) for p in before),
        "written_frozen": len(frozen),
        "kept": {int(p): int(e) for p, e in epochs.items() if p in before},
        "new": {int(p): int(e) for p, e in epochs.items() if p not in before},
        "markers": [f"{m.control} of producer {m.producer_id}" for m in during.itertuples()],
    }


def _after_thaw(layout: RunLayout, pause: Pause) -> list[str]:
    """What the driver's log said of Kafka after the thaw, its first lines of each kind, in its own words."""
    path = layout.log(f"streamlet-{pause.target}")
    if pause.log_bytes is None or not path.is_file():
        return []
    with path.open("rb") as handle:
        handle.seek(pause.log_bytes)
        text = handle.read().decode(errors="replace")
    said, kinds = [], set()
    for line in text.splitlines():
        match = SAID.search(line)
        if match and match.group(0) not in kinds and len(said) < SHOWN:
            kinds.add(match.group(0))
            said.append(f"  {line.strip()[:200]}")
    return said


def _unseen() -> dict:
    """What the brokers' view says where none was read: nothing."""
    return {"before": [], "written_frozen": 0, "kept": {}, "new": {}, "markers": []}


def _named(epochs: dict[int, int]) -> str:
    return ", ".join(f"producer {p} (epoch {e})" for p, e in sorted(epochs.items()))


def _lines(pause: Pause, settings: dict[str, str], view: dict, said: list[str], producing: bool) -> list[str]:
    if not producing:
        return [f"fault {pause.number} ({pause.target}): it writes no Kafka topic: no producer's timeout applies"]
    where = "as its Kafka producer logged them" if settings else "at Kafka's defaults (its driver logged no producer's)"
    lines = [f"fault {pause.number} ({pause.target}): the timeouts, {where}, its pause outlasted:"]
    for name, ms, own, effect in outlasted(pause.resumed_ms - pause.paused_ms, settings):
        lines.append(f"  {name} = {ms}{'' if own else ' (default)'}: {effect}")
    if len(lines) == 1:
        lines.append("  none")
    if view["kept"]:
        lines.append(f"  after the thaw the brokers took its writes under the producers it had: {_named(view['kept'])}")
    if view["new"]:
        lines.append(f"  after the thaw it wrote under producers new to the brokers: {_named(view['new'])}")
    if view["markers"]:
        lines.append(f"  while it was frozen a coordinator wrote: {', '.join(view['markers'][:SHOWN])}")
    if view["written_frozen"]:
        lines.append(f"  {view['written_frozen']} batches stamped while it was frozen: the pause did not hold")
    if said:
        lines += [f"fault {pause.number} ({pause.target}): its log after the thaw says:", *said]
    return lines


def _section(context: Context) -> Section | None:
    found = [p for p in pauses(context.evidence.history) if p.resumed_ms is not None]
    if not found:
        return None
    layout, pipeline = RunLayout(context.evidence.root), context.evidence.pipeline
    producers = run_producers(context, "a paused producer untold")
    rows, lines, data = [], [], {}
    for pause in found:
        log = layout.log(f"streamlet-{pause.target}")
        settings = client_settings(log.read_text(errors="replace")) if log.is_file() else {}
        target = next(s for s in pipeline.streamlets if s.name == pause.target)
        producing = bool(settings or target.outputs)
        batches = None if producers is None else producers[producers.topic.isin(target.outputs)]
        view = broker_view(batches, pause) if batches is not None and not batches.empty else None
        if view is None and not producing:
            view = _unseen()
        lines += _lines(pause, settings, view or _unseen(), _after_thaw(layout, pause), producing)
        names = [name for name, *_ in outlasted(pause.resumed_ms - pause.paused_ms, settings)] if producing else []
        cells = (
            (None,) * 5
            if view is None
            else (
                len(view["before"]),
                view["written_frozen"],
                len(view["kept"]),
                len(view["new"]),
                len(view["markers"]),
            )
        )
        after = None if pause.running is None else "running" if pause.running else "ended"
        seconds = round((pause.resumed_ms - pause.paused_ms) / 1000, 1)
        rows.append((pause.number, pause.target, seconds, ", ".join(names) or "none", *cells, after))
        data[str(pause.number)] = {"outlasted": names, "settings": settings, "brokers": view}
    return Section("A paused driver", tuple(lines), HEADER, tuple(rows), data=data)


KIND = Step("pauses", section=_section)
