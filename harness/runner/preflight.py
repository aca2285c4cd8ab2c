"""The preflight of a run of applications, before the workload: each application reads the topics it was given
(its checkpoint says which), and one canary record gets through to every output within a deadline. So a job
started with the wrong topic, checkpoint or field is stopped in one line saying so, never judged as losing
records.

The canary is a record like the workload's (from its template, drawn until every application's declared filter
keeps it and an output receives it) with
key `canary` and seq 0, written to the source topic and logged in acks.csv as the generator logs its records: it
is part of the run's evidence and judged like any other record.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Callable

from contract.applications import APPLICATION, OUTPUT_KINDS
from contract.identity import IdentityReader, compose
from harness.codecs import value_encoder
from harness.errors import HarnessError
from harness.evidence.checkpoint import planned_topics
from harness.evidence.history import CANARY_ARRIVED, CANARY_SENT
from harness.evidence.values import CANARY_VALUES, ValueLog
from harness.faults.kind import GENERATOR
from harness.outputs import Reader
from harness.scenario.applications import declared_filters, judged_fields
from harness.waiting import wait_for
from harness.workload.generator import AckLog, DeclaredDrops
from harness.workload.predicate import Predicate
from harness.workload.template import RecordMaker, record_fields, template_encoder
from pipelines.model import SOURCE_RECORD

if TYPE_CHECKING:
    from harness.runner.pipeline_run import PipelineRun

CANARY_KEY = "canary"


def read_topics(checkpoint_topics: set[str], given: set[str], name: str) -> None:
    """An application must read the topics it was given (its checkpoint's offsets name them)."""
    if checkpoint_topics and not checkpoint_topics & given:
        raise HarnessError(
            f"applications.{name}: its checkpoint reads {', '.join(sorted(checkpoint_topics))}, not the topics it "
            f"was given ({', '.join(sorted(given))}): does the job subscribe to the ${{topic.NAME}} it is passed?"
        )


def canary_value(
    template: dict | None, keeps: list[str], receives: list[str | None], seed: int, event_ms: int, key: str = CANARY_KEY
) -> tuple[dict, str | None, list]:
    """The canary's value, message key and headers (or another single record's, its harness key `key`, seq 0): the
    workload's record format, kept by every application's declared filter (`keeps`) and sent to at least one
    output (`receives`: each output's filter, None: all)."""
    if template is None:
        return {"key": key, "seq": 0, "event_time_ms": event_ms, "payload": ""}, key, []
    maker = RecordMaker(template, f"{key}-{seed}")
    filters = [Predicate(sql, record_fields(template)) for sql in keeps]
    outputs = [None if sql is None else Predicate(sql, record_fields(template)) for sql in receives]
    for _ in range(10_000):
        value, message_key, headers = maker.make(key, 0, event_ms)
        if all(f.keeps(value) for f in filters) and any(o is None or o.keeps(value) for o in outputs):
            return value, message_key, headers
    raise HarnessError(
        "workload.record: no record of the template passes every application's keeps and an output's receives"
    )


def source_encoder(workload) -> Callable[[dict], bytes]:
    """How a record is written to a source topic (`workload`: the workload, or one source topic it feeds: its
    `record` and `topic`): the template's (JSON, or Avro of the team's schema), or the harness's own record in the
    topic's codec."""
    if workload.record:
        return template_encoder(workload.record)
    return value_encoder(workload.topic.codec, SOURCE_RECORD)


def send_canary(
    access, topic: str, ack_log, message: tuple[bytes, str | None, list], event_ms: int, key: str = CANARY_KEY
) -> None:
    """Write the canary (its value encoded, message key, headers; its harness key `key`) to the source topic and log
    its outcome in acks.csv (acked, or a HarnessError)."""
    from confluent_kafka import Producer

    value, message_key, headers = message
    log = AckLog(str(ack_log))
    # One record, acks=all: no idempotence to set up, and librdkafka's own warnings kept off the harness's output.
    producer = Producer({**access.librdkafka(), "acks": "all", "log_level": 3})
    delivered = log.add((key, 0, event_ms, 0))
    outcome: list = []
    producer.produce(
        topic,
        key=None if message_key is None else message_key.encode(),
        value=value,
        headers=headers or None,
        on_delivery=lambda error, msg: (delivered(error, msg), outcome.append(error)),
    )
    producer.flush(60)
    log.drain(final=True)
    log.close()
    if not outcome or outcome[0] is not None:
        raise HarnessError(
            f"the {key} record could not be written to {topic}: {outcome[0] if outcome else 'no answer'}"
        )


def expected_identity(identity: dict, key: str = CANARY_KEY) -> str:
    """What the canary's identity looks like where an output keeps it (`key`: its harness key)."""
    if "id" in identity:
        return f"{identity['id']} = {compose(identity.get('format', '{key}-{seq}'), key, 0)!r}"
    return f"{identity['key']} = {key!r} and {identity['seq']} = 0"


def wait_canary(
    outputs: dict[str, tuple[dict, Callable[[], list[dict]]]],
    dead: Callable[[], str | None],
    timeout_s: float,
    expected: dict[str, set[str]] | None = None,
) -> float:
    """Until every output holds the canary: `outputs` maps an output to its identity and a reader of its records
    (topic-dump lines: {"value": ...}); `expected`: the canaries' harness keys each awaits (None: `canary`, one
    source topic's). Returns the seconds it took; raises a HarnessError naming the first output without one, what it
    holds instead (its first record) and what was expected."""
    t0 = time.monotonic()
    missing = {name: set((expected or {}).get(name) or {CANARY_KEY}) for name in outputs}

    def arrived() -> bool:
        for name, keys in list(missing.items()):
            read = IdentityReader(outputs[name][0])
            keys -= {key for r in outputs[name][1]() for key, seq in [read(r)] if seq == 0 and key in keys}
            if not keys:
                del missing[name]
        return not missing

    try:
        wait_for(arrived, timeout=timeout_s, interval=1.0, what="the canary record at every output", abort=dead)
    except HarnessError as exc:
        if not missing:
            raise
        name, keys = next(iter(missing.items()))
        identity, records = outputs[name]
        found = records()
        holds = f"its first record is {json.dumps(found[0].get('value'))[:300]}" if found else "it holds no record"
        raise HarnessError(
            f"outputs.{name}: the canary record did not arrive ({exc}); "
            f"expected a record with {expected_identity(identity, min(keys))}; {holds}"
        ) from None
    return time.monotonic() - t0


def preflight(run: PipelineRun) -> None:
    """Before the workload, for applications: each reads the topics it was given, and a canary record reaches
    every output (harness/runner/preflight.py): one per source topic, awaited where its records may arrive. A
    misconfiguration stops the run here, in one line."""
    apps = [n for n, i in run.scenario.blueprint.streamlets.items() if i.kind == APPLICATION]
    if not apps:
        return
    for name in apps:
        given = set(run.input_topics(name))
        read_topics(planned_topics(run.layout.checkpoints(name)), given, name)
    if run.scenario.canary_timeout_s is None:
        return
    if not output_readers(run):
        run.say("preflight: no output holds records the canary could be one of (windowed counts, aggregates): none")
        return
    w = run.scenario.workload
    streamlets = run.scenario.blueprint.streamlets
    filters = declared_filters(run.scenario.blueprint)
    outputs = [n for n, i in streamlets.items() if i.kind in OUTPUT_KINDS]
    event_ms = int(time.time() * 1000)
    keeps = [filters[n] for n in apps if n in filters]
    # An output whose `receives` does not take the canary expects it missing, by design, as the generator's records.
    fields = record_fields(w.record) if w.record else []
    routed = DeclaredDrops(
        fields, {n: filters[n] for n in outputs if n in filters}, run.layout.dropped(GENERATOR).parent
    )
    judged = judged_fields(run.scenario.blueprint)
    values = ValueLog(run.layout.values / f"{CANARY_VALUES}.csv", judged) if judged else None
    prefixes = run.topology.source_keys()
    keys, kept = {}, set(output_readers(run))  # source topic -> its canary's key; the outputs it is kept at
    receives = [filters.get(n) for n in outputs]
    for source in w.fed:  # filters are declared for one source topic only (scenario/parse.py)
        topic = run.topic_name(source.topic)
        key = prefixes.get(topic, "") + CANARY_KEY
        value, message_key, headers = canary_value(source.record, keeps, receives, w.seed, event_ms, key)
        routed.note(key, 0, value)
        if values is not None:
            values.note(key, 0, value)
        kept -= {n for n, f in routed.filters.items() if not f.keeps(value)}
        encoded = (source_encoder(source)(value), message_key, headers)
        send_canary(run.kafka, topic, run.ack_log, encoded, event_ms, key=key)
        run.history.record(CANARY_SENT, key=key, seq=0)
        keys[topic] = key
    routed.close()
    if values is not None:
        values.close()
    description = run.topology.describe()
    kept -= joined(description)  # a canary has no partner's answer: a join makes no result of it
    expected = {n: {keys[t] for t in description.sources_of(n)} for n in kept}
    awaited = {n: reader for n, reader in output_readers(run).items() if n in kept}
    took = wait_canary(awaited, run.dead_driver, run.scenario.canary_timeout_s, expected)
    run.history.record(CANARY_ARRIVED, seconds=round(took, 3))
    run.say(f"preflight: the canary record reached every output in {took:.1f}s")


def joined(description) -> set[str]:
    """The outputs downstream of an application joining a partner topic (`joins`): the canary, answered by none, is not
    among their records (the checker counts it dropped by the join: harness/checker/joins.py)."""
    joining = {s.name for s in description.streamlets if "partner" in ((s.settings or {}).get("joins") or {})}
    return {
        s.name for s in description.streamlets if s.kind in OUTPUT_KINDS and description.upstream_of(s.name) & joining
    }


def output_readers(run: PipelineRun) -> dict[str, Reader]:
    """Each output's identity and a reader of the records it holds now (topic-dump lines, table rows, committed
    file rows); an output holding no record's copy (a windowed count) has none."""
    return {name: reader for name, sink in run.sinks.items() if (reader := sink.reader()) is not None}
