"""The run's schema registry, asked by Confluent's own client: its schemas by subject and by id, a registration, its
errors, and the framed records it serves decoded by Confluent's Avro deserializer (the registry's lookup by the id in
each record's header), every request the client made in its log."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

from harness.process import Supervisor
from harness.process.ports import free_ports
from harness.waiting import wait_for
from harness.workload.registry import Registered, RegistrySettings
from harness.workload.template import RecordMaker, TemplateError, parse_template, template_encoder

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "orders-lake"
TEMPLATE = {
    "avro": "order.avsc",
    "schema_id": 42,
    "registry": True,
    "identity": {"id": "order_id", "format": "{key}-{seq}"},
    "fields": {"customer": {"choice": ["ada", "bob"]}, "amount": {"decimal": [1, 9]}, "created": "2026"},
}


def test_confluents_client_reads_the_schemas_and_decodes_the_framed_records_by_their_id(tmp_path):
    template = parse_template(TEMPLATE, folder=EXAMPLES)
    schema = json.dumps(template["avro"])
    port = free_ports(1)[0]
    settings, log = tmp_path / "registry.json", tmp_path / "registry.jsonl"
    RegistrySettings(port, str(log), (Registered("orders-value", 1, 42, schema),)).save(settings)
    argv = [sys.executable, "-m", "harness.workload.registry", str(settings)]
    with Supervisor(tmp_path / "pids") as supervisor:
        server = supervisor.start("registry", argv, tmp_path / "registry.log")
        client = SchemaRegistryClient({"url": f"http://127.0.0.1:{port}"})
        wait_for(lambda: _answers(client), timeout=30, what="the registry to answer")
        latest = client.get_latest_version("orders-value")
        assert (latest.schema_id, latest.version, latest.subject) == (42, 1, "orders-value")
        assert json.loads(latest.schema.schema_str) == template["avro"]
        assert json.loads(client.get_schema(42).schema_str) == template["avro"]
        assert client.get_subjects() == ["orders-value"] and client.get_versions("orders-value") == [1]
        assert client.get_version("orders-value", 1).schema_id == 42
        # framed as the generator frames them, decoded by Confluent's deserializer: it asks the registry for id 42
        maker, encode = RecordMaker(template, 1), template_encoder(template)
        made = [maker.make("k0001", seq, 0)[0] for seq in range(5)]
        decode = AvroDeserializer(SchemaRegistryClient({"url": f"http://127.0.0.1:{port}"}))
        context = SerializationContext("orders", MessageField.VALUE)
        assert [decode(encode(value), context) for value in made] == made
        # a registration: the same schema keeps its id, under a new subject too; another schema gets the next one
        assert client.register_schema("orders-value", Schema(schema, "AVRO")) == 42
        assert client.register_schema("audit-value", Schema(schema, "AVRO")) == 42
        other = json.dumps({"type": "record", "name": "Other", "fields": [{"name": "x", "type": "int"}]})
        assert client.register_schema("orders-value", Schema(other, "AVRO")) == 43
        fresh = SchemaRegistryClient({"url": f"http://127.0.0.1:{port}"})  # the first caches what it was told
        assert fresh.get_latest_version("orders-value").version == 2 and fresh.get_versions("orders-value") == [1, 2]
        for ask, code in ((lambda: client.get_schema(7), 40403), (lambda: client.get_latest_version("x"), 40401)):
            with pytest.raises(SchemaRegistryError) as raised:
                ask()
            assert raised.value.error_code == code
        assert server.running()
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    paths = [(line["method"], line["path"].split("?")[0]) for line in lines]
    assert ("GET", "/subjects/orders-value/versions/latest") in paths and ("GET", "/schemas/ids/42") in paths
    assert ("POST", "/subjects/orders-value/versions") in paths and {line["status"] for line in lines} == {200, 404}


def _answers(client: SchemaRegistryClient) -> bool:
    try:
        return client.get_subjects() is not None
    except Exception:  # not listening yet
        return False


def test_a_registry_without_the_schema_it_serves_is_refused_in_one_line():
    with pytest.raises(TemplateError, match=r"^workload.record.registry: true serves the schema of schema_id"):
        parse_template({k: v for k, v in TEMPLATE.items() if k != "schema_id"}, folder=EXAMPLES)
    with pytest.raises(TemplateError, match=r"^workload.record.registry: true serves"):
        parse_template({**TEMPLATE, "registry": "yes"}, folder=EXAMPLES)
