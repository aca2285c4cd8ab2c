"""Blueprint validation: each kind of broken blueprint is rejected with the right message."""

from __future__ import annotations

import pytest
import yaml

from harness.scenario.blueprint import parse_blueprint
from harness.scenario.fields import BlueprintError

GOOD = """
streamlets:
  ingress: {kind: ingress}
  processor: {kind: processor}
  egress: {kind: egress, settings: {mode: transactional}}
connections:
  ingress.out: [processor.in]
  processor.out: [egress.in]
"""


def parse(text: str):
    return parse_blueprint(yaml.safe_load(text))


def test_a_good_blueprint_gives_order_topics_and_settings():
    bp = parse(GOOD)
    assert bp.order() == ["ingress", "processor", "egress"]
    assert [t.name for t in bp.hops()] == ["ingress-out", "processor-out"]
    assert bp.streamlets["egress"].settings["mode"] == "transactional"
    assert bp.streamlets["processor"].settings["crash_probability"] == 0.0
    assert bp.inputs_of("egress")["in"].name == "processor-out"
    assert bp.outputs_of("ingress")["out"].name == "ingress-out"


def test_fan_out_to_two_egresses():
    bp = parse(
        GOOD.replace("processor.out: [egress.in]", "processor.out: [egress.in, audit.in]").replace(
            "  egress: {kind", "  audit: {kind: egress, settings: {mode: append}}\n  egress: {kind"
        )
    )
    assert set(bp.order()[-2:]) == {"egress", "audit"}


BROKEN = [
    (
        "unknown kind",
        GOOD.replace("kind: processor", "kind: proccessor"),
        "blueprint.streamlets.processor.kind: unknown streamlet kind 'proccessor'",
    ),
    (
        "unconnected inlet",
        GOOD.replace("  processor.out: [egress.in]\n", ""),
        "blueprint.connections: inlet egress.in is not connected",
    ),
    (
        "unknown streamlet in a connection",
        GOOD.replace("[egress.in]", "[egres.in]"),
        "blueprint.connections.processor.out: unknown streamlet 'egres'",
    ),
    (
        "unknown outlet",
        GOOD.replace("processor.out:", "processor.output:"),
        "streamlet 'processor' (processor) has no outlet 'output' (outlets: out)",
    ),
    (
        "schema mismatch",
        GOOD.replace("kind: processor", "kind: windowed-count"),
        "schema mismatch: processor.out writes WindowCount/v1 but egress.in reads SeqRecord/v1",
    ),
    (
        "unknown codec",
        GOOD + "topics:\n  processor.out: {codec: protobuf}\n",
        "blueprint.topics.processor.out.codec: expected one of json, avro, got 'protobuf'",
    ),
    (
        "cycle",
        """
streamlets:
  ingress: {kind: ingress}
  a: {kind: processor}
  b: {kind: processor}
  egress: {kind: egress}
connections:
  ingress.out: [egress.in]
  a.out: [b.in]
  b.out: [a.in]
""",
        "blueprint.connections: cycle: a -> b -> a",
    ),
    (
        "inlet fed twice",
        GOOD.replace("ingress.out: [processor.in]", "ingress.out: [processor.in, egress.in]"),
        "inlet egress.in is already fed by ingress.out",
    ),
    (
        "no ingress",
        """
streamlets:
  p: {kind: processor}
  q: {kind: processor}
connections:
  p.out: [q.in]
  q.out: [p.in]
""",
        "blueprint.streamlets: no ingress",
    ),
    (
        "bad egress mode",
        GOOD.replace("mode: transactional", "mode: exactly"),
        "blueprint.streamlets.egress.settings.mode: expected one of append, upsert, dedup, transactional, got "
        "'exactly'",
    ),
    (
        "unknown setting",
        GOOD.replace("{mode: transactional}", "{mode: upsert, colour: red}"),
        "blueprint.streamlets.egress.settings.colour: unknown setting for egress",
    ),
    ("unknown field", GOOD + "extra: 1\n", "blueprint.extra: unknown field"),
    (
        "bad partitions",
        GOOD + "topics:\n  ingress.out: {partitions: 0}\n",
        "blueprint.topics.ingress.out.partitions: expected a value of at least 1, got 0",
    ),
    (
        "topic for nothing",
        GOOD + "topics:\n  egress.out: {partitions: 2}\n",
        "blueprint.topics.egress.out: names no connected outlet",
    ),
    ("not a port", GOOD.replace("[processor.in]", "[processor]"), "expected 'streamlet.port', got 'processor'"),
    (
        "crash probability",
        GOOD.replace("kind: processor}", "kind: processor, settings: {crash_probability: 2}}"),
        "crash_probability: expected a number from 0 to 1, got 2",
    ),
]


@pytest.mark.parametrize("case,text,message", BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_blueprints_are_rejected_with_the_right_message(case, text, message):
    with pytest.raises(BlueprintError) as err:
        parse(text)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_a_topic_has_a_codec_and_a_port_that_pins_one_needs_topics_of_it():
    bp = parse(GOOD + "topics:\n  processor.out: {codec: avro}\n")
    assert [t.codec for t in bp.hops()] == ["json", "avro"]

    from pipelines.api import SEQ_RECORD, Inlet, Shape
    from pipelines.builtin.egress import Egress

    class JsonOnly(Egress):  # a user's egress that reads JSON only
        shape = Shape(inlets=(Inlet("in", SEQ_RECORD, codec="json"),))

    import sys
    import types

    module = types.ModuleType("pinned_codec")
    module.JsonOnly = JsonOnly
    sys.modules["pinned_codec"] = module
    try:
        pinned = GOOD.replace("kind: egress, settings: {mode: transactional}", "kind: pinned_codec:JsonOnly")
        assert parse(pinned).streamlets["egress"].cls is JsonOnly
        with pytest.raises(BlueprintError) as error:
            parse(pinned + "topics:\n  processor.out: {codec: avro}\n")
        assert str(error.value) == "blueprint.topics.processor.out.codec: egress.in is declared json, the topic is avro"
    finally:
        del sys.modules["pinned_codec"]
