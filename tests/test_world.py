"""A job wired as it is wired (examples/as-wired, unchanged): its broker address, checkpoint, paths and config file
given to it in a world of its own (harness/world/). Every bad world is one line before anything starts; validate
names what a job's code names that its scenario does not map; mount points for paths the machine lacks are removed
by the last run to let go. The real runs: two at once of the job that hard-codes localhost:9092, its checkpoint and
its table; the job configured by a file naming a container's broker, beside the job with no checkpoint; the job
setting its master by name. Each count
equals one made here from the run's raw outputs; the example's folder and /tmp are as they were."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from harness.errors import HarnessError
from harness.scenario import load_scenario
from harness.world.mountpoints import MountPoints
from tests.conftest import run_harness
from tests.evidence_helpers import acked
from tests.test_application_files import _ids, _sink_state
from tests.test_bad_input import assert_one_line_error

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "as-wired"


def _job(tmp_path: Path, world: dict, code: str = "", **app) -> Path:
    """The Parquet example's scenario with this world, its job a copy of the example's (`code` appended)."""
    raw = yaml.safe_load((EXAMPLE / "orders-to-parquet.yaml").read_text())
    raw["applications"]["orders"]["world"] = world
    raw["applications"]["orders"].update(app)
    (tmp_path / "orders_to_parquet.py").write_text((EXAMPLE / "orders_to_parquet.py").read_text() + code)
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


@pytest.mark.parametrize(
    "world, code, message",
    [
        ({"paths": {"/etc/orders": None}}, "", "world.paths./etc/orders: /etc/orders is one of the machine's own"),
        ({"paths": {"/": None}}, "", "is one of the machine's own folders"),
        ({"paths": {"../elsewhere": None}}, "", "../elsewhere leaves the job's folder"),
        ({"paths": {"out": None, "./out": "${scratch}"}}, "", "/out is mapped twice"),
        ({"paths": {"chk": "${checkpoint}/q1"}}, "", "expected one run folder"),
        ({"paths": {"chk": "${path.nope}"}}, "", "no file output 'nope'"),
        ({"kafka": ["localhost:9092", "localhost:9092"]}, "", "world.kafka[1]: localhost:9092 is mapped twice"),
        ({"kafka": ["10.0.0.5:9092"]}, "", "10.0.0.5:9092: only names and loopback addresses are mapped"),
        ({"kafka": ["kafka"]}, "", "expected host:port"),
        ({"files": {"settings.ini": "missing.template"}}, "", "missing.template: cannot be read"),
        ({"files": {"settings.ini": "bad.template"}}, "", "(bad.template:2): unknown placeholder ${nope}"),
        ({"setup": ["python make.py"]}, "", "world.setup[0]: expected a command"),
        ({"registry": "schema-registry:8081"}, "", "world.registry: the run serves no schema registry"),
        ({}, "", "world: maps nothing"),
        ({"kafka": ["localhost:9092"]}, "\ndbutils.fs.ls('/mnt')\n", "is written for Databricks' runtime"),
    ],
)
def test_a_bad_world_is_one_line_naming_it(tmp_path, world, code, message):
    (tmp_path / "bad.template").write_text("[kafka]\nbootstrap = ${nope}\n")
    with pytest.raises(HarnessError) as caught:
        load_scenario(_job(tmp_path, world, code))
    assert message in str(caught.value) and "\n" not in str(caught.value), caught.value


def test_a_world_on_a_standalone_cluster_is_refused(tmp_path):
    path = _job(tmp_path, {"kafka": ["localhost:9092"]})
    raw = yaml.safe_load(path.read_text()) | {"cluster": {"spark": {"master": "standalone", "workers": 1}}}
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(HarnessError, match="world: not yet on the harness's standalone cluster"):
        load_scenario(path)


def test_validate_names_what_the_code_names_that_the_world_does_not_map(tmp_path):
    path = _job(tmp_path, {"paths": {"/tmp/orders-parquet": "${path.lake}"}})
    result = run_harness("validate", str(path))
    notes = [line.strip() for line in result.stdout.splitlines() if line.strip().startswith("note")]
    assert result.returncode == 0 and notes == [
        "note applications.orders: orders_to_parquet.py:16 names localhost:9092: a broker address its world does "
        "not map (world.kafka)",
    ], result.stdout
    assert run_harness("validate", str(EXAMPLE)).stdout.count("note") == 0  # the examples map what they name


def test_where_namespaces_are_refused_a_world_is_one_line_naming_what_works_without(tmp_path):
    """Inside a user namespace with no user mapped, as an unprivileged container is, the kernel refuses new
    namespaces: the scenario is refused before anything starts."""
    path = _job(tmp_path, {"kafka": ["localhost:9092"]})
    harness, out = ROOT / ".venv" / "bin" / "harness", tmp_path / "run"
    refused = ["unshare", "--user", str(harness), "run", str(path), "--out", str(out)]
    result = subprocess.run(refused, capture_output=True, text=True, timeout=120)
    assert_one_line_error(result, "needs Linux namespaces, which this machine refuses (unshare: Operation not")
    assert "${bootstrap}, ${checkpoint}, ${path.NAME}" in result.stderr and not out.exists()


def test_a_mount_point_stands_while_a_run_holds_it_and_the_last_one_removes_it(tmp_path):
    machine = tmp_path / "machine"
    machine.mkdir()
    target = machine / "data" / "orders"
    first, second = MountPoints(tmp_path / "a.json"), MountPoints(tmp_path / "b.json")
    first.ensure(str(target), folder=True)
    second.ensure(str(target), folder=True)  # a second run at once: it finds it, and holds it too
    assert target.is_dir() and json.loads((tmp_path / "a.json").read_text()) == [str(machine / "data"), str(target)]
    assert first.release() == [] and target.is_dir()  # the other run holds it
    assert second.release() == [str(target), str(machine / "data")]  # the last to let go, though it made neither
    assert list(machine.iterdir()) == [] and MountPoints(tmp_path / "a.json").release() == []  # `clean`: nothing
    kept = machine / "theirs"  # the machine's own folder: held while a run mounts under it, never removed
    kept.mkdir()
    held = MountPoints(tmp_path / "d.json")
    held.ensure(str(kept / "orders"), folder=True)
    assert held.release() == [str(kept / "orders")] and kept.is_dir()
    config = machine / "etc-app.ini"
    only = MountPoints(tmp_path / "c.json")
    only.ensure(str(config), folder=False)
    assert config.is_file() and only.release() == [str(config)] and not config.exists()


# The real runs.


@pytest.mark.e2e
def test_a_setup_step_that_fails_stops_the_run_before_its_workload(tmp_path):
    raw = yaml.safe_load((EXAMPLE / "orders-enrich.yaml").read_text())
    world = raw["applications"]["enrich"]["world"]
    world["setup"] = [["python", "-c", "raise SystemExit(3)"]]
    world["files"] = {"settings.ini": str(EXAMPLE / "settings.ini.template")}
    raw["applications"]["enrich"]["cwd"] = str(EXAMPLE)
    (tmp_path / "scenario.yaml").write_text(yaml.safe_dump(raw))
    out = tmp_path / "run"
    result = run_harness("run", str(tmp_path / "scenario.yaml"), "--out", str(out), timeout=300)
    assert_one_line_error(result, "applications.enrich.world.setup[0]: python -c raise SystemExit(3) exited 3 (see")
    ran = [e for e in _history(out) if e["event"] == "setup_ran"]
    assert [(e["step"], e["exit_code"]) for e in ran] == [(0, 3)]
    assert not any(e["event"] == "process_started" and e.get("role") == "generator" for e in _history(out))
    assert _left_behind() == []


def _left_behind() -> list[str]:
    """What runs of the examples could leave outside their run directories."""
    status = subprocess.run(
        ["git", "status", "--porcelain", "--ignored", str(EXAMPLE)], capture_output=True, text=True, cwd=ROOT
    )
    return status.stdout.splitlines() + [
        p for p in ("/tmp/orders-parquet", "/data/checkpoints", "/opt/spark") if Path(p).exists()
    ]


def _runs(tmp_path: Path, scenarios: list[str]) -> list[tuple[Path, dict]]:
    """The examples' scenarios run at once, each with `harness run` (its exit code: the gate's), and judged."""

    def one(i: int, scenario: str) -> tuple[Path, dict, int]:
        out = tmp_path / f"{i}-{scenario}"
        done = run_harness("run", str(EXAMPLE / f"{scenario}.yaml"), "--out", str(out), timeout=900)
        return out, json.loads((out / "report.json").read_text()), done.returncode

    with ThreadPoolExecutor(len(scenarios)) as pool:
        found = list(pool.map(one, range(len(scenarios)), scenarios))
    for out, report, code in found:
        assert code == 0, (out, report["outcome"], report["gaps"], report["expectations"])
    return [(out, report) for out, report, _ in found]


@pytest.mark.e2e
def test_two_runs_at_once_of_a_job_that_hard_codes_its_broker_checkpoint_and_table(tmp_path):
    assert _left_behind() == []
    for run_dir, report in _runs(tmp_path, ["orders-to-parquet", "orders-to-parquet"]):
        table = run_dir / "work" / "lake" / "table"
        rows = _ids(table, _sink_state(table, named=Path("/tmp/orders-parquet")))  # its log names the job's path
        deliveries = _ids(table, {str(p.relative_to(table)): set() for p in table.rglob("part-*.parquet")})
        sent, counts = acked(run_dir), report["counts"]
        assert counts["lost"] == len(sent - set(rows)) == 0
        assert counts["duplicated_in_state"] == sum(1 for r, n in rows.items() if n > 1) == 0
        assert counts["duplicated_deliveries"] == sum(1 for r, n in deliveries.items() if n > 1)
        assert (run_dir / "checkpoints" / "orders" / "commits").is_dir()  # its chk-point-dir, in the run
        kills = [e for e in _history(run_dir) if e["event"] == "fault_begun"]
        assert [k.get("held_batch") is not None for k in kills] == [True, False], kills
        world = report["sections"]["world"]["rows"][0]
        assert "127.0.0.1:9092 -> " in world[1] and "/tmp/orders-parquet -> " in world[2], world
    assert _left_behind() == []


@pytest.mark.e2e
def test_a_job_configured_by_a_file_and_a_job_without_a_checkpoint(tmp_path):
    (enrich, enriched), (mirror, mirrored) = _runs(tmp_path, ["orders-enrich", "orders-mirror"])
    # The job read the rendered settings.ini (the run's topic and checkpoint) and dialed kafka:29092.
    copies = _orders(enrich / "topics" / "orders-enriched.jsonl")
    assert enriched["counts"]["lost"] == len(acked(enrich) - set(copies)) == 0
    assert enriched["counts"]["duplicated_deliveries"] == sum(1 for n in copies.values() if n > 1) > 0
    assert (enrich / "checkpoints" / "enrich" / "main" / "commits").is_dir()
    upper = enrich / "world" / "enrich" / "folder" / "upper"
    assert (upper / "settings.ini").read_text().count("kafka:29092") == 1
    assert json.loads((upper / "tiers.json").read_text()) == {"gold": 250, "silver": 50}  # its setup step wrote it
    assert [e["exit_code"] for e in _history(enrich) if e["event"] == "setup_ran"] == [0]
    assert {json.loads(line)["value"]["tier"] for line in (enrich / "topics" / "orders-enriched.jsonl").open()} == {
        "gold",
        "silver",
        "standard",
    }
    # The job without a checkpoint started over at its restart, from the newest offsets: what it never read is lost.
    mirrored_ids = set(_orders(mirror / "topics" / "orders-mirror.jsonl"))
    assert (
        mirrored["counts"]["lost"] == len(acked(mirror) - mirrored_ids) > 0
        and mirrored["verdict"]["end_to_end"] == "at-most-once"
    )
    assert mirrored["sections"]["world"]["rows"][0][-1].startswith("none: Spark's temporary one")
    assert _left_behind() == []


@pytest.mark.e2e
def test_a_job_that_sets_its_master_by_name_runs_on_a_cluster_in_its_world(tmp_path):
    """spark://spark-master:7077 in its code: a master and a worker of its own start in its world at each start,
    and its executors (the worker's children) read and write through kafka:9092 as its driver does."""
    assert _left_behind() == []
    [(run_dir, report)] = _runs(tmp_path, ["orders-on-cluster"])
    copies = _orders(run_dir / "topics" / "orders-banded.jsonl")
    assert report["counts"]["lost"] == len(acked(run_dir) - set(copies)) == 0
    assert report["counts"]["duplicated_deliveries"] == sum(1 for n in copies.values() if n > 1)
    executors = list((run_dir / "world" / "banded" / "spark" / "worker").glob("app-*/*/stderr"))
    assert len(executors) == 2, executors  # one application per start, its executor on the world's worker
    assert (run_dir / "checkpoints" / "banded" / "orders-banded" / "commits").is_dir()
    assert "spark://spark-master:7077 -> a Spark master" in report["sections"]["world"]["rows"][0][1]
    assert _left_behind() == []


def _orders(dump: Path) -> Counter:
    """(key, seq) of each order in a topic's dump (its order_id "key-seq"; the canary's is no record's)."""
    ids = [json.loads(line)["value"]["order_id"] for line in dump.read_text().splitlines()]
    return Counter((k, int(s)) for k, _, s in (i.rpartition("-") for i in ids) if s.isdigit())


def _history(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]
