"""Applications, outputs and record templates as a scenario gives them: what a good one becomes, every bad one
refused in one line naming the field before anything starts, identities written and read back the same way, and
the connector given to the job without touching its code (no broker, no Spark)."""

from __future__ import annotations

import inspect
import io
import itertools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml

from contract.identity import IdentityReader
from harness.errors import HarnessError
from harness.evidence.checkpoint import CheckpointFollower, CommitLog, batch_events, merged_events, planned_topics
from harness.runner.applications import SUBMIT_ARGS, application_command, connector_options
from harness.scenario import load_scenario
from harness.scenario.applications import declared_filters
from harness.scenario.fields import BlueprintError
from harness.scenario.parse import parse_scenario
from harness.scenario.source import ScenarioError
from harness.spark import lines, versions
from harness.spark.versions import runtime
from harness.workload.generator import record_plan
from harness.workload.generator_settings import WorkloadSettings
from harness.workload.template import RecordMaker, TemplateError, parse_template

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "enrich-kafka" / "scenario.yaml"
SCRATCH = Path("/runs/r 1/spark-local/orders")  # a space: the java option keeps it one argument
HOME = Path("/runs/r 1/work/orders")


def _scenario(tmp_path: Path, change, example: Path = EXAMPLE) -> Path:
    """`example`'s scenario changed by `change`, in `tmp_path` (with an empty file for each script the example's
    commands run, so its cwd holds them, and the sample of records and Avro schema its template names)."""
    raw = yaml.safe_load(example.read_text())
    scripts = {a for app in raw.get("applications", {}).values() for a in app.get("command", []) if a.endswith(".py")}
    for script in scripts | {"job.py"}:
        (tmp_path / script).write_text("")
    change(raw)
    record = raw["workload"].get("record", {})
    for name in filter(None, (record.get("sample"), record.get("avro"))):
        (tmp_path / name).write_bytes((example.parent / name).read_bytes())
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def test_the_example_becomes_an_application_streamlet_and_two_output_egresses():
    scenario = load_scenario(EXAMPLE)
    app, out, dead = (scenario.blueprint.streamlets[n] for n in ("enrich", "enriched", "rejected"))
    assert (app.kind, app.role, app.runs) == ("application", "ingress", True)
    assert (out.kind, out.role, out.runs) == (dead.kind, dead.role, dead.runs) == ("kafka-output", "egress", False)
    assert [t.name for t in scenario.blueprint.hops()] == ["orders-enriched", "orders-rejected"]
    assert declared_filters(scenario.blueprint) == {
        "enrich": "amount IS NOT NULL",
        "enriched": "amount >= 5",
        "rejected": "amount < 5",
    }
    assert app.settings["cwd"] == str(EXAMPLE.parent) and app.settings["command"][1] == "job.py"


def _both(*changes):
    def change(raw):
        for one in changes:
            one(raw)

    return change


def _no_template(raw):
    del raw["workload"]["record"]


def _set(path: str, value):
    def change(raw):
        node = raw
        *parents, last = path.split(".")
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if value is None:
            del node[last]
        else:
            node[last] = value

    return change


BAD = [
    ("no command", _set("applications.enrich.command", None), "applications.enrich: give its command"),
    ("other launcher", _set("applications.enrich.command", ["java", "-jar", "x.jar"]), "start with python or"),
    (
        "unknown placeholder",
        _set("applications.enrich.command", ["python", "job.py", "${brokers}"]),
        "command[2]: unknown placeholder ${brokers}",
    ),
    (
        "unknown topic",
        _set("applications.enrich.command", ["python", "job.py", "${topic.nope}"]),
        "${topic.nope}: no topic 'nope'",
    ),
    (
        "no registry",
        _set("applications.enrich.command", ["python", "job.py", "${registry}"]),
        "command[2]: ${registry}: the run serves no registry (workload.record.registry: true)",
    ),
    (
        "schedule too often",
        _set("applications.enrich.schedule", {"every_s": 0}),
        "applications.enrich.schedule.every_s: expected a value of at least 1, got 0",
    ),
    ("schedule without its period", _set("applications.enrich.schedule", {}), "schedule.every_s: required field"),
    (
        "env placeholder",
        _set("applications.enrich.env", {"X": "${secret}"}),
        "applications.enrich.env.X: unknown placeholder",
    ),
    ("missing cwd", _set("applications.enrich.cwd", "nowhere"), "applications.enrich.cwd: no such folder"),
    ("missing script", _set("applications.enrich.command", ["python", "-u", "jb.py"]), "command[2]: no such script:"),
    (
        "missing submitted script",
        _set("applications.enrich.command", ["spark-submit", "--conf", "a=b", "--verbose", "jb.py"]),
        "applications.enrich.command[4]: no such script:",
    ),
    ("missing module", _set("applications.enrich.command", ["python", "-m", "jb"]), "command[2]: no module jb in"),
    ("no script", _set("applications.enrich.command", ["python", "-u"]), "command: names no script or module to"),
    (
        "output topic unknown",
        _set("outputs.enriched.topic", "elsewhere"),
        "outputs.enriched.topic: no application writes 'elsewhere'",
    ),
    (
        "identity half",
        _set("outputs.enriched.identity", {"key": "customer"}),
        "outputs.enriched.identity: expected key and seq",
    ),
    (
        "identity both",
        _set("outputs.enriched.identity", {"key": "a", "seq": "b", "id": "c"}),
        "give key and seq, or id",
    ),
    (
        "bad format",
        _set("outputs.enriched.identity", {"id": "order_id", "format": "{key}"}),
        "format: expected text with {key} and {seq}",
    ),
    ("no outputs", _set("outputs", None), "outputs: no outputs"),
    ("writes the source", _set("applications.enrich.writes", ["orders"]), "'orders' is the workload's source topic"),
    (
        "reads nothing known",
        _set("applications.enrich.reads", ["elsewhere"]),
        "applications.enrich.reads: no topic 'elsewhere'",
    ),
    (
        "not the source",
        _set("applications.enrich.reads", ["orders-enriched"]),
        "no application reads the workload's source topic",
    ),
    (
        "blueprint too",
        _set("blueprint", {"streamlets": {}}),
        "applications: give a blueprint or applications, not both",
    ),
    ("source options", _set("source_options", {"enrich": {}}), "source_options: not for applications"),
    (
        "fault on output",
        _set("faults.1.target", "enriched"),
        "kill-driver needs a streamlet or application, 'enriched' is an output",
    ),
    ("entry and command", _set("applications.enrich.entry", "job:run"), "give its command (an argument list) or"),
    (
        "entry missing",
        _both(_set("applications.enrich.command", None), _set("applications.enrich.entry", "no_such_job:run")),
        "applications.enrich.entry: cannot import 'no_such_job'",
    ),
    ("settings of a command", _set("applications.enrich.settings", {"a": "b"}), "settings: only with an entry"),
    ("filter parse", _set("applications.enrich.keeps", "amount >>= 5"), "keeps: 'amount >>= 5' is not a predicate"),
    ("filter field", _set("applications.enrich.keeps", "amout >= 5"), "no such column: amout"),
    ("filter statement", _set("applications.enrich.keeps", "1; DROP TABLE x"), "expected an SQL predicate"),
    ("filter no template", lambda raw: _no_template(raw), "applications.enrich.keeps: a filter is over the fields"),
    ("dedup scope", _set("applications.enrich.deduplicates", {"within": 30}), "applications.enrich.deduplicates"),
    ("dedup zero", _set("applications.enrich.deduplicates", {"within_s": 0}), "deduplicates.within_s: expected"),
    ("route parse", _set("outputs.rejected.receives", "amount <"), "outputs.rejected.receives: 'amount <' is not a"),
    ("route field", _set("outputs.enriched.receives", "total >= 5"), "no such column: total"),
    (
        "template field",
        _set("workload.record.fields.customer", {"choice": []}),
        "workload.record.fields.customer.choice: expected a list",
    ),
    (
        "template identity",
        _set("workload.record.fields.order_id", "x"),
        "workload.record.fields.order_id: is where the identity goes",
    ),
    (
        "template generator",
        _set("workload.record.fields.amount", {"decimal": [5, 1]}),
        "workload.record.fields.amount.decimal: expected [LOW, HIGH]",
    ),
    ("template keyword", _set("workload.record.fields.amount", {"random": 1}), "expected one of int, decimal"),
    (
        "template key",
        _set("workload.record.message_key", "nope"),
        "workload.record.message_key: expected key, null or a field",
    ),
]


@pytest.mark.parametrize("case,change,message", BAD, ids=[b[0] for b in BAD])
def test_bad_application_specs_are_refused_naming_the_field(tmp_path, case, change, message):
    path = _scenario(tmp_path, change)
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    text = str(err.value)
    assert text.startswith(f"{path}: ") and "\n" not in text
    assert message in text, text


TABLE_EXAMPLE = ROOT / "examples" / "orders-db" / "upsert.yaml"


def test_an_output_table_is_an_egress_the_harness_creates_and_reads():
    scenario = load_scenario(TABLE_EXAMPLE)
    table = scenario.blueprint.streamlets["table"]
    assert (table.kind, table.role, table.runs) == ("table-output", "egress", False)
    assert table.settings["written_by"] == "orders" and table.cls.egress_evidence == "records"
    assert table.settings["database"] == "postgresql"
    in_sqlite = load_scenario(TABLE_EXAMPLE.parent / "insert.yaml")  # no store: the table is in a file of the run's
    assert in_sqlite.store_url is None and in_sqlite.blueprint.streamlets["table"].settings["database"] == "sqlite"


PLAIN_COMMAND = _set("applications.orders.command", ["python", "job.py"])
TABLE_BAD = [
    ("no store", _set("store", None), "store: output tables live in a PostgreSQL store"),
    ("other database", _set("outputs.table.database", "mysql"), "outputs.table.database: expected one of postgresql"),
    (
        "not an SQLite table",
        _set("applications.orders.command", ["python", "job.py", "${database.orders}"]),
        "${database.orders}: no SQLite output table 'orders' (SQLite tables: none)",
    ),
    (
        "bad table name",
        _both(PLAIN_COMMAND, _set("outputs.table.table", "Orders; DROP")),
        "outputs.table.table: expected a lower-case SQL name",
    ),
    (
        "bad column",
        _set("outputs.table.columns", {"order_id": "text; DROP TABLE x"}),
        "outputs.table.columns.order_id: expected an SQL type",
    ),
    (
        "identity column",
        _set("outputs.table.identity", {"id": "nope"}),
        "outputs.table.identity.id: 'nope' is not one of the columns",
    ),
    (
        "writer",
        _set("outputs.table.written_by", "someone"),
        "outputs.table.written_by: expected the application writing it",
    ),
    (
        "unknown table",
        _set("applications.orders.command", ["python", "job.py", "${table.nope}"]),
        "${table.nope}: no output table 'nope'",
    ),
    (
        "writes nothing judged",
        _both(PLAIN_COMMAND, _set("outputs", {"t": {"topic": "x", "identity": {"id": "a"}}})),
        "no application writes 'x'",
    ),
]


@pytest.mark.parametrize("case,change,message", [t for t in TABLE_BAD if t[2]], ids=[t[0] for t in TABLE_BAD if t[2]])
def test_bad_output_tables_are_refused_naming_the_field(tmp_path, case, change, message):
    with pytest.raises(ScenarioError) as err:
        load_scenario(_scenario(tmp_path, change, TABLE_EXAMPLE))
    assert message in str(err.value) and "\n" not in str(err.value), str(err.value)


FILES_EXAMPLE = ROOT / "examples" / "orders-lake" / "delta.yaml"


def test_a_file_output_is_an_egress_read_from_its_files_and_its_writer_gets_deltas_jars():
    scenario = load_scenario(FILES_EXAMPLE)
    lake = scenario.blueprint.streamlets["lake"]
    assert (lake.kind, lake.role, lake.runs) == ("file-output", "egress", False)
    assert lake.settings["format"] == "delta" and lake.settings["written_by"] == "orders"
    assert scenario.blueprint.streamlets["orders"].cls.spark_jars == ("delta",)
    parquet = load_scenario(FILES_EXAMPLE.parent / "parquet.yaml")
    assert parquet.blueprint.streamlets["orders"].cls.spark_jars == ()
    argv, env = application_command(["python", "job.py"], {}, runtime(None), SCRATCH, HOME, ("delta",))
    assert any(a.startswith("spark.driver.extraClassPath=") and "delta-spark" in a for a in env[SUBMIT_ARGS].split())


FILES_BAD = [
    ("format", _set("outputs.lake.format", "orc"), "outputs.lake.format: expected one of delta, iceberg, parquet"),
    ("format type", _set("outputs.lake.format", ["delta"]), "outputs.lake.format: expected str, got ['delta']"),
    ("field", _set("outputs.lake.table_path", "x"), "outputs.lake.table_path: unknown field"),
    (
        "unknown folder",
        _set("applications.orders.command", ["python", "job.py", "${path.nope}"]),
        "${path.nope}: no file output 'nope' (file outputs: lake)",
    ),
    (
        "catalog name",
        _set("outputs.lake.catalog_table", "/data/orders"),
        "outputs.lake.catalog_table: expected a table's name in the session catalog, [DB.]TABLE, got '/data/orders'",
    ),
    (
        "iceberg by catalog name",
        _both(_set("outputs.lake.format", "iceberg"), _set("outputs.lake.catalog_table", "shop.orders")),
        "outputs.lake.catalog_table: an Iceberg table is named in its own catalog, whose warehouse is ${path.NAME}",
    ),
    ("writer", _set("outputs.lake.written_by", "someone"), "outputs.lake.written_by: expected the application"),
    ("identity", _set("outputs.lake.identity", {"key": "a"}), "outputs.lake.identity: expected key and seq"),
    (
        "a Spark without an Iceberg runtime",
        _both(_set("outputs.lake.format", "iceberg"), _set("cluster", {"spark": {"version": "4.2.0"}})),
        "cluster.spark.version: orders (application) needs iceberg, and no iceberg release built for Spark 4.2 is "
        "served",
    ),
]


@pytest.mark.parametrize("case,change,message", FILES_BAD, ids=[t[0] for t in FILES_BAD])
def test_bad_file_outputs_are_refused_naming_the_field(tmp_path, case, change, message):
    with pytest.raises(ScenarioError) as err:
        load_scenario(_scenario(tmp_path, change, FILES_EXAMPLE))
    assert message in str(err.value) and "\n" not in str(err.value), str(err.value)


WINDOWS_EXAMPLE = ROOT / "examples" / "orders-lake" / "windows.yaml"


def test_a_windowed_output_makes_its_writer_the_counter_the_checker_reconciles():
    scenario = load_scenario(WINDOWS_EXAMPLE)
    counts, windows = scenario.blueprint.streamlets["counts"], scenario.blueprint.streamlets["windows"]
    assert windows.cls.egress_evidence == "windows" and windows.settings["identity"] is None
    assert counts.settings["window"]["slide"] == "10 seconds" and counts.cls.event_time_window(counts.settings)
    assert counts.cls.drops_late_events(counts.settings)


WINDOWS_BAD = [
    ("size", _set("outputs.windows.window.size", "ten"), "outputs.windows.window.size: expected a length of time"),
    ("slide", _set("outputs.windows.window.slide", "3 seconds"), "window.slide: expected a length '10 seconds' is"),
    ("time", _set("outputs.windows.window.time", "nope"), "window.time: 'nope' is not an event_time field"),
    ("mode", _set("outputs.windows.window.mode", "complete"), "window.mode: expected one of append, update"),
    ("count", _set("outputs.windows.window", {"size": "1 minute"}), "outputs.windows.window.watermark: required"),
]


@pytest.mark.parametrize("case,change,message", WINDOWS_BAD, ids=[t[0] for t in WINDOWS_BAD])
def test_bad_windows_are_refused_naming_the_field(tmp_path, case, change, message):
    with pytest.raises(ScenarioError) as err:
        load_scenario(_scenario(tmp_path, change, WINDOWS_EXAMPLE))
    assert message in str(err.value) and "\n" not in str(err.value), str(err.value)


def test_a_written_topic_nothing_reads_is_refused(tmp_path):
    def change(raw):
        raw["applications"]["enrich"]["writes"] = ["orders-enriched", "orders-rejected", "audit"]

    with pytest.raises(ScenarioError, match="applications.enrich.writes: nothing reads 'audit'"):
        load_scenario(_scenario(tmp_path, change))


def test_the_cli_refuses_a_bad_application_in_one_line_and_starts_nothing(tmp_path):
    path = _scenario(tmp_path, _set("applications.enrich.command", ["python", "job.py", "${brokers}"]))
    out = tmp_path / "run"
    result = subprocess.run(
        [sys.executable, "-m", "harness.cli", "run", str(path), "--out", str(out)], capture_output=True, text=True
    )
    assert result.returncode == 2 and not out.exists()
    assert result.stderr.strip().count("\n") == 0 and "unknown placeholder ${brokers}" in result.stderr


TEMPLATE = {
    "identity": {"id": "order.id", "format": "o-{seq}@{key}"},
    "message_key": "customer",
    "fields": {
        "customer": {"choice": {"ada": 3, "bob": 1}},
        "amount": {"decimal": [1, 9], "scale": 1, "nulls": 0.5},
        "qty": {"int": [1, 3]},
        "note": {"text": 4},
        "at": {"event_time": "iso"},
        "ms": {"event_time": "ms"},
        "tags": {"array": {"choice": ["a", "b"]}, "length": [2, 2]},
        "meta": {"const": {"v": 1}},
        "order": {"object": {"kind": "web"}},
        "fixed": 7,
    },
}


def test_a_template_makes_the_same_records_from_the_same_seed_with_the_identity_where_it_says():
    template = parse_template(TEMPLATE)

    def records(seed: int) -> list:
        maker = RecordMaker(template, seed)
        return [maker.make("k0001", seq, 1_764_115_200_123) for seq in range(50)]

    first, again, other = records(5), records(5), records(6)
    assert first == again and first != other
    value, key, headers = first[17]
    assert value["order"] == {"kind": "web", "id": "o-17@k0001"} and key == value["customer"] and headers == []
    assert value["at"] == "2025-11-26T00:00:00.123Z" and value["ms"] == 1_764_115_200_123
    assert value["meta"] == {"v": 1} and value["fixed"] == 7 and len(value["tags"]) == 2
    nulls = sum(v["amount"] is None for v, _, _ in first)
    assert 10 < nulls < 40 and all(v["amount"] is None or 1 <= v["amount"] <= 9 for v, _, _ in first)
    # read back by the same identity, from a topic dump's line
    read = IdentityReader(template["identity"])
    assert read({"key": key, "value": json.loads(json.dumps(value))}) == ("k0001", 17)
    assert read({"value": {"order": {"id": "17@k0001"}}}) == (None, "17@k0001")  # not this format: a phantom


def test_identities_in_the_message_key_or_a_header():
    template = parse_template({"identity": {"key": "kafka.key", "seq": "kafka.header.seq"}, "fields": {"a": 1}})
    value, key, headers = RecordMaker(template, 1).make("k0002", 9, 0)
    assert value == {"a": 1} and key == "k0002" and headers == [("seq", b"9")]
    assert IdentityReader(template["identity"])({"key": key, "value": value, "headers": {"seq": "9"}}) == ("k0002", "9")
    with pytest.raises(TemplateError, match="workload.record.identity: expected key and seq"):
        parse_template({"identity": {"key": "a"}})


def test_headers_of_a_template_are_drawn_as_fields_are_in_their_order_the_identitys_after_them():
    raw = {
        "identity": {"id": "kafka.header.ce_id"},
        "headers": {"ce_specversion": "1.0", "ce_type": {"choice": ["a", "b"]}, "ce_time": {"event_time": "ms"}},
        "fields": {"n": {"int": [1, 9]}, "meta": {"const": {"v": 1}}},
    }
    raw["headers"]["ce_data"] = {"object": {"m": {"int": [1, 2]}}, "nulls": 0.5}
    maker, again = RecordMaker(parse_template(raw), 3), RecordMaker(parse_template(raw), 3)
    records = [maker.make("k0001", seq, 1_764_115_200_123) for seq in range(40)]
    assert records == [again.make("k0001", seq, 1_764_115_200_123) for seq in range(40)]
    names = [[name for name, _ in headers] for _, _, headers in records]
    assert names == [["ce_specversion", "ce_type", "ce_time", "ce_data", "ce_id"]] * 40
    first = dict(records[7][2])
    assert first["ce_specversion"] == b"1.0" and first["ce_time"] == b"1764115200123" and first["ce_id"] == b"k0001-7"
    data = [dict(headers)["ce_data"] for _, _, headers in records]
    assert None in data and {json.loads(d)["m"] for d in data if d is not None} == {1, 2}  # a null: no value
    assert {dict(h)["ce_type"] for _, _, h in records} == {b"a", b"b"} and records[0][0]["meta"] == {"v": 1}
    with pytest.raises(TemplateError, match="workload.record.headers.ce_id: is where the identity goes"):
        parse_template({**raw, "headers": {"ce_id": "x"}})
    with pytest.raises(TemplateError, match="workload.record.headers.ce_type.nulls: expected a share"):
        parse_template({**raw, "headers": {"ce_type": {"choice": ["a"], "nulls": 2}}})
    with pytest.raises(TemplateError, match="workload.record.headers: expected a mapping of header names"):
        parse_template({**raw, "headers": ["ce_type"]})


def test_the_connector_reaches_the_job_on_its_class_path_and_its_own_submit_args_are_kept():
    own = runtime(None)
    submit_args = {SUBMIT_ARGS: "--driver-memory 1g pyspark-shell"}
    argv, env = application_command(["python", "job.py", "--x"], submit_args, own, SCRATCH, HOME)
    assert argv == [own.python, "job.py", "--x"]
    args = shlex.split(env[SUBMIT_ARGS])
    assert args[-3:] == ["--driver-memory", "1g", "pyspark-shell"] and "--jars" not in args
    assert any(a.startswith("spark.driver.extraClassPath=") and "spark-sql-kafka" in a for a in args)
    # A killed driver's scratch (its block manager's and context's folders) stays in the run, not in /tmp.
    assert f"spark.local.dir={SCRATCH}" in args
    assert f'"-Djava.io.tmpdir={SCRATCH}"' in args[args.index("--driver-java-options") + 1]
    # What Spark would leave in the job's folder is kept in the run instead, across the job's restarts.
    assert f"spark.sql.warehouse.dir={HOME / 'spark-warehouse'}" in args
    assert f'"-Dderby.system.home={HOME}"' in args[args.index("--driver-java-options") + 1]
    argv, env = application_command(["spark-submit", "--master", "local[2]", "job.py"], {}, own, SCRATCH, HOME)
    assert argv[0].endswith("/spark-submit") and argv[-3:] == ["--master", "local[2]", "job.py"]
    assert SUBMIT_ARGS not in env and "--conf" in argv and f"spark.local.dir={SCRATCH}" in argv
    with pytest.raises(HarnessError, match="must end in pyspark-shell"):
        application_command(["python", "job.py"], {SUBMIT_ARGS: "--jars a.jar"}, own, SCRATCH, HOME)


def test_an_applications_progress_is_read_from_its_checkpoint(tmp_path):
    query = tmp_path / "app" / "main"
    (query / "offsets").mkdir(parents=True)
    (query / "commits").mkdir()
    follower = CheckpointFollower(tmp_path / "app")
    follower.driver_started(4242, 0.0)
    assert follower.lag({("orders", 0): 10}) is None and not follower.reporting(4242)
    assert not follower.stateless()  # nothing committed: not known yet
    for batch, offset in ((0, 0), (1, 6), (2, 10)):
        meta = '{"batchWatermarkMs":0,"batchTimestampMs":1}'
        (query / "offsets" / str(batch)).write_text(f'v1\n{meta}\n{{"orders":{{"0":{offset}}}}}')
        if batch < 2:
            (query / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    assert follower.reporting(4242) and not follower.reporting(1)  # a pid it did not start
    assert follower.lag({("orders", 0): 10}) == 4  # batch 2 is planned, not committed
    assert follower.stateless()
    (query / "state" / "0").mkdir(parents=True)  # where Spark keeps a state operator's store
    assert not follower.stateless()
    assert [(e["progress"]["batchId"], e["progress"]["numInputRows"]) for e in batch_events(tmp_path / "app")] == [
        (0, 0),
        (1, 6),
    ]


def _commit(query: Path, batch: int, offset: int) -> None:
    """Batch `batch` of a checkpoint, read up to `offset` of orders' partition 0, committed."""
    (query / "offsets").mkdir(parents=True, exist_ok=True)
    (query / "commits").mkdir(exist_ok=True)
    meta = '{"batchWatermarkMs":0,"batchTimestampMs":1}'
    (query / "offsets" / str(batch)).write_text(f'v1\n{meta}\n{{"orders":{{"0":{offset}}}}}')
    (query / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')


def test_an_applications_batches_are_recorded_as_committed_though_spark_deletes_the_oldest(tmp_path):
    query, log = tmp_path / "app" / "main", tmp_path / "progress" / "app.jsonl"
    recorder = CommitLog(tmp_path / "app", log)
    for batch in range(3):
        _commit(query, batch, 5 * batch)
    assert recorder.record() == 3 and recorder.record() == 0  # nothing new the second time
    for batch in (0, 1):  # as Spark does past minBatchesToRetain
        (query / "offsets" / str(batch)).unlink()
        (query / "commits" / str(batch)).unlink()
    _commit(query, 3, 17)
    assert recorder.record() == 1
    recorded = [json.loads(line) for line in log.read_text().splitlines()]
    rows = [(e["progress"]["batchId"], e["progress"]["numInputRows"]) for e in recorded]
    assert rows == [(0, 0), (1, 5), (2, 5), (3, 7)]
    # The checkpoint alone has lost batches 0 and 1 and counts batch 2 from nothing; with the record, all four.
    kept = batch_events(tmp_path / "app")
    assert [(e["progress"]["batchId"], e["progress"]["numInputRows"]) for e in kept] == [(2, 10), (3, 7)]
    _commit(query, 4, 20)  # committed after the recorder's last look: only the checkpoint has it
    merged = merged_events(recorded, batch_events(tmp_path / "app"))
    assert [(e["progress"]["batchId"], e["progress"]["numInputRows"]) for e in merged] == rows + [(4, 3)]
    shutil.rmtree(query)  # a fresh checkpoint (a redeploy): its batches from 0 again, counted from nothing
    _commit(query, 0, 30)
    assert recorder.record() == 1
    assert json.loads(log.read_text().splitlines()[-1])["progress"]["numInputRows"] == 30


def test_a_real_time_query_shows_its_topics_and_its_start_before_its_first_batch(tmp_path):
    """A Real-time Mode query writes offsets/N only as its first interval ends; where its source starts, at once."""
    query = tmp_path / "app" / "main"
    (query / "offsets").mkdir(parents=True)
    follower = CheckpointFollower(tmp_path / "app")
    follower.driver_started(4242, time.time() - 1)
    assert planned_topics(tmp_path / "app") == set() and not follower.sources_started(4242)
    (query / "sources" / "0").mkdir(parents=True)
    (query / "sources" / "0" / "0").write_text('v1\n{"orders":{"0":0,"1":0}}')
    assert planned_topics(tmp_path / "app") == {"orders"} and follower.sources_started(4242)
    assert not follower.reporting(4242) and not follower.sources_started(1)  # no batch; a pid it did not start


def test_a_sample_of_the_teams_own_records_is_replayed_in_turn_with_the_identity_written(tmp_path):
    from harness.workload.template import RecordMaker, TemplateError, parse_template, record_fields

    sample = tmp_path / "orders.jsonl"
    sample.write_text('{"order_id": "A-1", "customer": "ada", "created": "old"}\n\n{"order_id": "A-2", "qty": 2}\n')
    raw = {"sample": "orders.jsonl", "identity": {"id": "order_id"}, "fields": {"created": {"event_time": "ms"}}}
    template = parse_template(raw, folder=tmp_path)
    assert record_fields(template) == ["order_id", "customer", "created", "qty"]
    maker = RecordMaker(template, 1)
    made = [maker.make("k1", seq, 5_000)[0] for seq in range(3)]
    assert made == [
        {"order_id": "k1-0", "customer": "ada", "created": 5_000},
        {"order_id": "k1-1", "qty": 2, "created": 5_000},
        {"order_id": "k1-2", "customer": "ada", "created": 5_000},
    ]
    sample.write_text('{"order_id": "A-1"}\n[1, 2]\n')
    with pytest.raises(TemplateError, match=r"workload.record.sample: orders.jsonl line 2: expected a JSON object"):
        parse_template(raw, folder=tmp_path)
    with pytest.raises(TemplateError, match=r"cannot read .*nope.jsonl"):
        parse_template({**raw, "sample": "nope.jsonl"}, folder=tmp_path)


def test_records_in_the_teams_avro_schema_and_an_avro_output_read_back_with_it(tmp_path):
    import fastavro

    from harness.codecs import avro_decoder
    from harness.workload.template import TemplateError, parse_template, template_encoder

    schema = ROOT / "examples" / "orders-lake" / "order.avsc"
    raw = {
        "avro": str(schema),
        "identity": {"id": "order_id"},
        "fields": {"customer": "ada", "amount": {"decimal": [1, 5]}, "created": {"event_time": "iso"}},
    }
    template = parse_template(raw)
    value = {"order_id": "k1-3", "customer": "ada", "amount": 2.5, "created": "2026-11-26T10:00:00.000Z"}
    encoded = template_encoder(template)(value)
    assert fastavro.schemaless_reader(io.BytesIO(encoded), fastavro.parse_schema(template["avro"]), None) == value
    assert avro_decoder(template["avro"])(encoded) == value
    with pytest.raises(TemplateError, match=r"workload.record.avro: a record of the template does not fit order"):
        parse_template({**raw, "fields": {"customer": "ada", "amount": "much", "created": "x"}})
    (tmp_path / "bad.avsc").write_text('{"type": "record", "name": "X", "fields": [{"name": "a"}]}')
    with pytest.raises(TemplateError, match=r"workload.record.avro: bad.avsc: not an Avro schema"):
        parse_template({**raw, "avro": "bad.avsc"}, folder=tmp_path)

    def avro_output(raw):
        raw["outputs"]["enriched"]["avro"] = str(schema)

    scenario = load_scenario(_scenario(tmp_path, avro_output))
    assert scenario.blueprint.streamlets["enriched"].settings["avro"]["name"] == "Order"
    with pytest.raises(ScenarioError, match=r"outputs.enriched.avro: cannot read .*nope.avsc"):
        load_scenario(_scenario(tmp_path, _set("outputs.enriched.avro", "nope.avsc")))


def test_records_in_the_confluent_wire_format_carry_the_magic_byte_and_schema_id_before_the_avro_body():
    import fastavro

    from harness.workload.template import TemplateError, parse_template, template_encoder

    raw = {
        "avro": str(ROOT / "examples" / "orders-lake" / "order.avsc"),
        "schema_id": 70000,
        "identity": {"id": "order_id"},
        "fields": {"customer": "ada", "amount": {"decimal": [1, 5]}, "created": {"event_time": "iso"}},
    }
    template = parse_template(raw)
    value = {"order_id": "k1-3", "customer": "ada", "amount": 2.5, "created": "2026-11-26T10:00:00.000Z"}
    encoded = template_encoder(template)(value)
    assert encoded[0] == 0 and int.from_bytes(encoded[1:5], "big") == 70000  # what a Schema Registry's serde reads
    assert fastavro.schemaless_reader(io.BytesIO(encoded[5:]), fastavro.parse_schema(template["avro"]), None) == value
    for bad, message in (
        ({**raw, "schema_id": 0}, r"workload.record.schema_id: expected a schema id from 1 to 2,147,483,647, got 0"),
        ({**raw, "schema_id": "7"}, r"workload.record.schema_id: expected a schema id .*, got '7'"),
        ({k: v for k, v in raw.items() if k != "avro"}, r"workload.record.schema_id: frames Avro records"),
    ):
        with pytest.raises(TemplateError, match=message):
            parse_template(bad)


def test_records_as_delimited_lines_in_the_jobs_column_order_as_lines_of_text_or_as_json_inside_a_json_string():
    from harness.workload.template import RecordMaker, TemplateError, parse_template, template_encoder

    raw = {
        "identity": {"id": "order_id", "format": "{key}-{seq}"},
        "fields": {"customer": {"choice": ["ada"]}, "amount": 2.5, "note": None, "tags": {"const": ["a", "b"]}},
        "delimited": {"columns": ["order_id", "amount", "customer", "note", "tags"], "separator": "|"},
    }
    value, _, _ = RecordMaker(parse_template(raw), 0).make("k1", 3, 0)
    assert template_encoder(parse_template(raw))(value) == b'k1-3|2.5|ada||["a", "b"]'
    plain = {k: v for k, v in raw.items() if k != "delimited"}
    assert json.loads(json.loads(template_encoder(parse_template({**plain, "json_string": True}))(value))) == value
    line = "{{order}} {order_id} by {customer}: {amount}{note} {tags}"
    assert template_encoder(parse_template({**plain, "line": line}))(value) == b'{order} k1-3 by ada: 2.5 ["a", "b"]'
    for bad, message in (
        ({**plain, "line": "{order_id} {colour}"}, r"workload.record.line: \{colour\} is not a field of the records"),
        ({**plain, "line": "{amount:.2f}"}, r"workload.record.line: \{amount\} takes a field's name only"),
        ({**plain, "line": "order {order_id"}, r"workload.record.line: expected '\}' before end of string"),
        ({**plain, "line": "no field"}, r"workload.record.line: expected one line of text with a \{FIELD\}"),
        ({**plain, "line": "{order_id}\n{amount}"}, r"workload.record.line: expected one line of text"),
        ({**raw, "line": "{order_id}"}, r"workload.record.line: one format for the records: delimited or line"),
        ({**raw, "delimited": {"columns": ["order_id", "colour"]}}, r"delimited.columns: 'colour' is not a field"),
        ({**raw, "delimited": {"columns": ["order_id"], "separator": "\n"}}, r"delimited.separator: expected one"),
        ({**raw, "json_string": True}, r"workload.record.json_string: one format for the records: delimited or"),
        ({**plain, "json_string": "yes"}, r"workload.record.json_string: expected true or false, got 'yes'"),
    ):
        with pytest.raises(TemplateError, match=message):
            parse_template(bad)


def test_executor_faults_on_a_job_setting_its_own_master_are_refused_and_others_run_on_the_cluster(tmp_path):
    from harness.runner.applications import cluster_options

    executors = ROOT / "examples" / "orders-lake" / "executors.yaml"
    scenario = load_scenario(executors)
    assert [r.kind for r in scenario.faults] == ["executor-kill", "worker-kill"]

    def own_master(raw):
        raw["applications"]["orders"]["command"] = ["python", "job.py"]

    path = _scenario(tmp_path, own_master, executors)
    (tmp_path / "job.py").write_text('spark = (\n    SparkSession.builder.master("local[2]")  # its own\n)\n')
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    assert "faults[0].target: executor-kill: applications.orders sets its own Spark master in its code (job.py:2)" in (
        str(err.value)
    )
    (tmp_path / "job.py").write_text("# spark.master: spark-submit's\nspark = SparkSession.builder.getOrCreate()\n")
    assert load_scenario(path).faults[0].target == "orders"

    options = cluster_options("spark://127.0.0.1:7077", "harness-r1-orders", "/jobs/orders", runtime(None))
    assert options[:4] == ["--master", "spark://127.0.0.1:7077", "--name", "harness-r1-orders"]
    assert "spark.executorEnv.HARNESS_APPLICATION=harness-r1-orders" in options
    argv, env = application_command(["python", "job.py"], {}, runtime(None), SCRATCH, HOME, (), options)
    assert "--master spark://127.0.0.1:7077" in env[SUBMIT_ARGS] and env[SUBMIT_ARGS].endswith("pyspark-shell")


@pytest.mark.parametrize("command", [["python", "-m", "job"], ["python", "-X", "dev", "job.py"], ["python", "-c", "1"]])
def test_a_command_running_a_script_or_module_there_is_accepted(tmp_path, command):
    scenario = load_scenario(_scenario(tmp_path, _set("applications.enrich.command", command)))
    assert scenario.blueprint.streamlets["enrich"].settings["command"] == command


REAL_TIME_EXAMPLE = ROOT / "examples" / "realtime-kafka" / "scenario.yaml"


def test_a_real_time_application_is_declared_by_its_trigger_and_its_deduplicating_variant_is_refused():
    assert load_scenario(REAL_TIME_EXAMPLE).blueprint.streamlets["screen"].settings["trigger"] == "real-time"
    assert load_scenario(EXAMPLE).blueprint.streamlets["enrich"].settings["trigger"] == "micro-batch"
    dedup = REAL_TIME_EXAMPLE.parent / "dedup.yaml"
    with pytest.raises(ScenarioError) as err:
        load_scenario(dedup)
    assert str(err.value) == (
        f"{dedup}: applications.screen.deduplicates: Real-time Mode with a deduplication or an aggregation needs "
        "Spark 4.3 or later, which is not served (the newest here: 4.2.0)"
    )


REAL_TIME_BAD = [
    (
        "on a schedule",
        _set("applications.screen.schedule", {"every_s": 10}),
        "applications.screen.schedule: a real-time query runs on: it ends after no run to start again",
    ),
    (
        "trigger",
        _set("applications.screen.trigger", "continuous"),
        "applications.screen.trigger: expected one of micro-batch, real-time, got 'continuous'",
    ),
    (
        "no topics",
        _both(_set("applications.screen.writes", None), _set("applications.screen.command", ["python", "job.py"])),
        "applications.screen.trigger: a real-time application is seen running by what it writes",
    ),
    (
        "task slots",
        _set("workload.topic.partitions", len(os.sched_getaffinity(0)) + 1),
        f"applications.screen.trigger: Real-time Mode runs a task per partition at once: it reads "
        f"{len(os.sched_getaffinity(0)) + 1} partitions",
    ),
    (
        "spark 4.0",
        _set("cluster", {"spark": {"version": "4.0.0"}}),
        "applications.screen.trigger: Real-time Mode needs Spark 4.2 or later; the drivers run 4.0.0 "
        "(set cluster.spark.version: 4.2.0)",
    ),
]


def test_the_harness_runs_real_time_jobs_on_the_pyspark_whose_trigger_takes_real_time():
    """What lines.py says of the drivers' own pyspark is what its DataStreamWriter.trigger's signature says."""
    from pyspark.sql.streaming import DataStreamWriter

    has = "realTime" in inspect.signature(DataStreamWriter.trigger).parameters
    assert has == (lines.real_time_unsupported(versions.own_version(), stateful=False) is None)


@pytest.mark.parametrize("case,change,message", REAL_TIME_BAD, ids=[t[0] for t in REAL_TIME_BAD])
def test_bad_real_time_applications_are_refused_naming_the_field(tmp_path, case, change, message):
    with pytest.raises(ScenarioError) as err:
        load_scenario(_scenario(tmp_path, change, REAL_TIME_EXAMPLE))
    assert message in str(err.value) and "\n" not in str(err.value), str(err.value)


def test_a_table_named_in_the_jobs_catalog_is_read_where_its_spark_keeps_it(tmp_path):
    from types import SimpleNamespace

    from harness.evidence.layout import RunLayout
    from harness.outputs.files import file_output_folder

    run = SimpleNamespace(layout=RunLayout(tmp_path))
    warehouse = tmp_path / "work" / "orders" / "spark-warehouse"  # the job's spark.sql.warehouse.dir

    def folder(named: str | None):
        return file_output_folder(run, "lake", {"written_by": "orders", "catalog_table": named})

    assert folder("Shop.Orders") == warehouse / "shop.db" / "orders"
    assert folder("default.orders") == folder("orders") == warehouse / "orders"
    assert folder(None) == tmp_path / "work" / "lake" / "table"
    assert f"spark.sql.warehouse.dir={warehouse}" in connector_options(runtime(None), tmp_path, warehouse.parent)


SECURED = ROOT / "examples" / "secured" / "scenario.yaml"


def _in_command(raw):
    raw["applications"]["screen"]["command"] += ["--password", "${kafka.password}"]


def _plaintext(raw):
    raw.pop("kafka"), raw.pop("cluster")


def _certificate_without_mutual_tls(raw):
    raw["applications"]["screen"]["command"] += ["--keystore-file", "${kafka.keystore_file}"]


@pytest.mark.parametrize(
    "change,message",
    [
        (_in_command, r"applications.screen.command[19]: ${kafka.password}: only in an application's env"),
        (_plaintext, r"applications.screen.command[11]: ${kafka.security_protocol}: the cluster is not secured"),
        (
            _certificate_without_mutual_tls,
            "applications.screen.command[19]: ${kafka.keystore_file}: the cluster asks clients for no certificate",
        ),
    ],
)
def test_a_job_reaches_a_secured_cluster_by_its_placeholders_and_its_password_only_through_its_env(
    tmp_path, change, message
):
    settings = load_scenario(SECURED).blueprint.streamlets["screen"].settings
    assert settings["env"] == {"KAFKA_PASSWORD": "${kafka.password}"} and "${kafka.ca_file}" in settings["command"]
    mutual = load_scenario(SECURED.parent / "mtls.yaml").blueprint.streamlets["screen"].settings  # its own certificate
    assert "${kafka.keystore_file}" in mutual["command"] and not mutual["env"]
    path = _scenario(tmp_path, change, SECURED)
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    assert message in str(err.value) and "\n" not in str(err.value), str(err.value)


SHOP_TOPICS = Path(__file__).resolve().parents[1] / "examples" / "shop-topics" / "scenario.yaml"


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda s: s["workload"]["sources"][1]["topic"].update(name="payments"), "'payments' is fed already"),
        (lambda s: s["workload"].update(workers=2), "not yet with several source topics"),
        (lambda s: s["outputs"]["fees"].update(sources=["orders-x"]), "is not a source topic its writer reads"),
        (
            lambda s: s["faults"].append({"kind": "retention-shrink", "target": "shop", "start_s": 5}),
            "retention-shrink on shop, a source topic's reader: not yet with several",
        ),
        (lambda s: s["applications"]["shop"].update(keeps="amount > 5"), "not yet for several source topics"),
    ],
)
def test_several_source_topics_refuse_what_is_judged_for_one_in_one_line(change, message):
    raw = yaml.safe_load(SHOP_TOPICS.read_text())
    change(raw)
    with pytest.raises(BlueprintError, match=re.escape(message)):
        parse_scenario(raw, SHOP_TOPICS.parent)


PARTNERS = SHOP_TOPICS.parent / "partners.yaml"


def _payments(change):
    return lambda s: change(s["workload"]["sources"][0])


@pytest.mark.parametrize(
    "change, message",
    [
        (_payments(lambda p: p["partner"].update(of="shipments")), "'shipments' is not a source topic fed before it"),
        (_payments(lambda p: p["partner"].update(field="payment_id")), "'payment_id': a top-level field of its own"),
        (_payments(lambda p: p["partner"].update(field="a.b")), "'a.b': a top-level field of its own"),
        (_payments(lambda p: p.update(rate=5)), "sources[0].rate: a partner topic's are those of the topic it answers"),
        (_payments(lambda p: p.pop("record")), "a partner's records carry the id they answer: give the source a"),
        (_payments(lambda p: p["partner"].update(missing=2)), "sources[0].partner.missing"),
        (lambda s: s["workload"].update(transactions={"records": 10}), "not yet with partner topics"),
    ],
)
def test_a_partner_topic_is_refused_in_one_line_where_it_cannot_answer(change, message):
    raw = yaml.safe_load(PARTNERS.read_text())
    change(raw)
    with pytest.raises(BlueprintError, match=re.escape(message)) as err:
        parse_scenario(raw, PARTNERS.parent)
    assert "\n" not in str(err.value)


JOIN = SHOP_TOPICS.parent / "join.yaml"


@pytest.mark.parametrize(
    "change, message",
    [
        (
            lambda s: s["applications"]["paid"]["joins"].update(partner="orders"),
            "joins.partner: 'orders' is not a partner",
        ),
        (lambda s: s["applications"]["paid"]["joins"].pop("within_s"), "applications.paid.joins.within_s"),
    ],
)
def test_a_join_is_refused_in_one_line_where_its_partner_cannot_answer_what_it_reads(change, message):
    raw = yaml.safe_load(JOIN.read_text())
    change(raw)
    with pytest.raises(BlueprintError, match=re.escape(message)) as err:
        parse_scenario(raw, JOIN.parent)
    assert "\n" not in str(err.value)


def test_a_join_keeps_when_its_partner_answers_for_the_checker():
    paid = parse_scenario(yaml.safe_load(JOIN.read_text()), JOIN.parent).blueprint.streamlets["paid"]
    assert paid.settings["joins"] == {
        "partner": "payments",
        "within_s": 5,
        "of": "orders",
        "after_s": 0.5,
        "late_by_s": 8,
    }


LEFT_JOIN = SHOP_TOPICS.parent / "left-join.yaml"


def test_a_left_outer_join_keeps_its_watermark_and_pads_by_the_partners_id_unless_told():
    raw = yaml.safe_load(LEFT_JOIN.read_text())
    joins = parse_scenario(raw, LEFT_JOIN.parent).blueprint.streamlets["with-payments"].settings["joins"]
    assert (joins["outer"], joins["watermark_s"], joins["padded_by"], joins["partner_format"]) == (
        "left",
        10,
        "payment_id",
        "{key}-{seq}",
    )
    raw["applications"]["with-payments"]["joins"]["padded_by"] = "method"  # a field of its own: no answer named
    joins = parse_scenario(raw, LEFT_JOIN.parent).blueprint.streamlets["with-payments"].settings["joins"]
    assert (joins["padded_by"], joins["partner_format"]) == ("method", None)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"watermark_s": None}, "joins.watermark_s: a left outer join needs the job's watermark delay"),
        ({"outer": "right"}, "joins.outer: expected one of left"),
        ({"outer": None}, "joins.watermark_s: only an outer join (outer: left) pads rows"),
    ],
)
def test_a_left_outer_join_is_refused_in_one_line_without_what_makes_its_padded_rows_due(change, message):
    raw = yaml.safe_load(LEFT_JOIN.read_text())
    joins = raw["applications"]["with-payments"]["joins"]
    joins.update(change)
    for name in [k for k, v in joins.items() if v is None]:
        del joins[name]
    with pytest.raises(BlueprintError, match=re.escape(message)) as err:
        parse_scenario(raw, LEFT_JOIN.parent)
    assert "\n" not in str(err.value)


STATIC_JOIN = ROOT / "examples" / "static-join" / "scenario.yaml"


def test_a_join_with_a_static_table_is_the_filter_of_its_columns_values():
    scenario = load_scenario(STATIC_JOIN)
    joins = scenario.blueprint.streamlets["regional"].settings["joins"]
    assert (joins["field"], joins["column"], joins["rows"]) == ("customer", "customer", 3)
    assert declared_filters(scenario.blueprint) == {"regional": "\"customer\" IN ('ada', 'bob', 'cy')"}
    raw = yaml.safe_load(STATIC_JOIN.read_text())
    raw["applications"]["regional"]["keeps"] = "amount >= 5"  # its own filter too: a record must pass both
    both = declared_filters(parse_scenario(raw, STATIC_JOIN.parent).blueprint)["regional"]
    assert both == "(amount >= 5) AND (\"customer\" IN ('ada', 'bob', 'cy'))"


@pytest.mark.parametrize(
    "joins, message",
    [
        ({"static": "customers.csv"}, "joins.field: a join with a static table needs the record field it joins on"),
        ({"static": "customers.csv", "field": "nope"}, "joins.field: expected a field of workload.record"),
        ({"static": "nope.csv", "field": "customer"}, "joins.static: cannot read"),
        ({"static": "customers.csv", "field": "customer", "column": "name"}, "customers.csv: no column 'name'"),
        ({"static": "customers.csv", "field": "customer", "partner": "x"}, "joins: name the partner topic it joins"),
        ({"field": "customer"}, "joins: name the partner topic it joins"),
        ({"partner": "payments"}, "joins.within_s: a join with a partner topic needs its time bound"),
    ],
)
def test_a_join_with_a_static_table_is_refused_in_one_line_where_it_cannot_be_read(joins, message):
    raw = yaml.safe_load(STATIC_JOIN.read_text())
    raw["applications"]["regional"]["joins"] = joins
    with pytest.raises(BlueprintError, match=re.escape(message)) as err:
        parse_scenario(raw, STATIC_JOIN.parent)
    assert "\n" not in str(err.value)


def test_a_partner_topic_takes_the_keys_and_the_rate_of_the_records_it_answers_less_its_missing_share():
    workload = parse_scenario(yaml.safe_load(PARTNERS.read_text()), PARTNERS.parent).workload
    orders, payments, shipments = workload.fed
    assert (payments.keys, payments.rate, shipments.rate) == (8, 54, 48) and payments.partner.of == "orders"
    assert workload.drawn_rate == 60 and workload.total_rate == 162
    assert payments.record["fields"]["order_id"] == "k0000-0"  # its template holds the field: an id like an order's


def test_several_source_topics_each_feed_their_own_keys_at_their_own_rate():
    scenario = parse_scenario(yaml.safe_load(SHOP_TOPICS.read_text()), SHOP_TOPICS.parent)
    assert [s.topic.name for s in scenario.workload.fed] == ["orders", "payments", "shipments"]
    assert scenario.workload.total_rate == 120
    sources = [
        {"topic": s.topic.name, "keys": s.keys, "rate": s.rate, "record": s.record, "codec": "json", "prefix": p}
        for s, p in zip(scenario.workload.fed, ("orders:", "payments:", "shipments:"))
    ]
    settings = WorkloadSettings("b", "orders", "acks.csv", keys=8, rate=120, sources=sources)
    drawn = Counter(key.partition(":")[0] for key, _, _, _ in itertools.islice(record_plan(settings), 12_000))
    assert set(drawn) == {"orders", "payments", "shipments"}
    for source in scenario.workload.fed:  # each topic's share of the records is its share of the rate, within 5%
        assert abs(drawn[source.topic.name] / 12_000 - source.rate / 120) < 0.05
