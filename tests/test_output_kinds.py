"""Output kinds as plug-ins: a kind of one's own (examples/outputs/jsonl_folder.py) named in a scenario by
package.module:attr, parsed by its own fields, and reached by the runner only through its Sink: prepared, named
to the job, read for the canary, exported into the contract's tables. Bad names are one line naming the field."""

from __future__ import annotations

import json
import shutil

import pytest

from contract.egress import AUDIT, STATE
from harness.outputs import builtin_output_kinds
from harness.runner.pipeline_run import PipelineRun
from harness.scenario.fields import BlueprintError
from harness.scenario.parse import parse_scenario
from tests.evidence_helpers import egress_counts
from tests.test_faults import ROOT


def _scenario(tmp_path, kind: str = "jsonl_folder:KIND") -> dict:
    shutil.copy(ROOT / "examples" / "outputs" / "jsonl_folder.py", tmp_path / "jsonl_folder.py")
    (tmp_path / "job.py").write_text("")  # the job the command names: never started here
    return {
        "name": "own-output",
        "workload": {"topic": {"name": "events"}, "rate": 10, "duration_s": 5},
        "applications": {
            "job": {
                "command": ["python", "job.py", "--out", "${path.events}"],
                "reads": ["events"],
                "cwd": str(tmp_path),
            }
        },
        "outputs": {"events": {"kind": kind, "identity": {"key": "key", "seq": "seq"}}},
    }


def test_the_built_in_kinds_are_found_in_their_folder():
    assert set(builtin_output_kinds()) == {
        "kafka-topic",
        "postgresql-table",
        "sqlite-table",
        "console",
        "delta-table",
        "parquet-files",
        "iceberg-table",
    }


def test_a_kind_of_ones_own_is_parsed_prepared_read_and_exported_through_its_sink(tmp_path):
    scenario = parse_scenario(_scenario(tmp_path), tmp_path)
    output = scenario.blueprint.streamlets["events"]
    assert (output.kind, output.role, output.runs) == ("file-output", "egress", False)
    assert output.settings["kind"] == "jsonl_folder:KIND" and output.settings["written_by"] == "job"
    with PipelineRun(scenario, tmp_path / "run") as run:
        sink = run.sinks["events"]
        assert sink.prepare() == {"folder": str(sink.folder)}
        assert sink.placeholders() == {"path.events": str(sink.folder)}
        # As the job writes it: batch 0 committed; batch 1 attempted twice, the second attempt committed.
        attempts = {"0-a.jsonl": [("k", 1), ("k", 2)], "1-a.jsonl": [("k", 3)], "1-b.jsonl": [("k", 3), ("k", 4)]}
        for name, rows in attempts.items():
            (sink.folder / name).write_text("".join(json.dumps({"key": k, "seq": s}) + "\n" for k, s in rows))
        (sink.folder / "_committed").mkdir()
        (sink.folder / "_committed" / "0").write_text("0-a.jsonl")
        (sink.folder / "_committed" / "1").write_text("1-b.jsonl")
        identity, read = sink.reader()
        assert identity == {"key": "key", "seq": "seq"} and len(read()) == 4
        assert run.output_probes("job")[0].latest_ms() > 0
        assert run.sinks["events"].export() == {"files": 3, "uncommitted_files": 1}
    assert egress_counts(tmp_path / "run", "events", AUDIT) == {("k", 1): 1, ("k", 2): 1, ("k", 3): 2, ("k", 4): 1}
    assert egress_counts(tmp_path / "run", "events", STATE) == {("k", 1): 1, ("k", 2): 1, ("k", 3): 1, ("k", 4): 1}


@pytest.mark.parametrize(
    "kind,message",
    [
        ("no_such_module:KIND", "outputs.events.kind: cannot import 'no_such_module'"),
        ("jsonl_folder:parse", "outputs.events.kind: jsonl_folder:parse is not an output kind"),
        ("jsonl_folder", "outputs.events.kind: expected package.module:attr"),
    ],
)
def test_a_kind_of_ones_own_that_cannot_be_used_is_one_line_naming_the_field(tmp_path, kind, message):
    with pytest.raises(BlueprintError) as err:
        parse_scenario(_scenario(tmp_path, kind), tmp_path)
    assert message in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    "line, store",
    [
        ('df.write.format("org.apache.spark.sql.cassandra").options(table="orders").save()', "Cassandra"),
        ('batch.write.format("mongodb").mode("append").save()', "MongoDB"),
        ("from pymongo import MongoClient", "MongoDB"),
        ('out.format("es").option("es.nodes", "localhost").start("orders")', "Elasticsearch"),
        ('url = "jdbc:clickhouse://localhost:8123/default"', "ClickHouse"),
        ("import clickhouse_connect", "ClickHouse"),
    ],
)
def test_a_job_writing_a_store_the_harness_cannot_start_is_refused_unless_a_kind_of_its_own_judges_it(
    tmp_path, line, store
):
    raw = _scenario(tmp_path)
    (tmp_path / "job.py").write_text(f"import sys\n# {store} is written below\n{line}\n")
    parse_scenario(raw, tmp_path)  # its own kind judges what it writes (and starts what it needs)
    raw["outputs"]["events"] = {"format": "parquet", "identity": {"key": "key", "seq": "seq"}}
    with pytest.raises(BlueprintError) as refused:
        parse_scenario(raw, tmp_path)
    assert str(refused.value) == (
        f"applications.job: job.py:3: {line[:60]!r} writes to {store}, which the harness cannot start: judge what it "
        "writes with an output kind of your own (docs/applications.md, An output kind of your own)"
    )
    (tmp_path / "job.py").write_text(f"# {line}\n")  # named in a comment only: nothing is written there
    parse_scenario(raw, tmp_path)
