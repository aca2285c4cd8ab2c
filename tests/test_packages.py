"""The packages a job asks Spark for (harness/spark/packages.py), served offline: its builder's spark.jars.packages
found in its code, a Kafka connector for another Spark served by the harness's own, any other package from the
harness's repository, a package for another Scala line or one no one can fetch refused in one line. The real runs:
examples/packages started with python and with spark-submit, at once, each judged, each count equal to one made
here from the output topic's recording."""

from __future__ import annotations

import json
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from harness.errors import HarnessError
from harness.scenario import load_scenario
from harness.spark.packages import Package, parse, refusal
from tests.conftest import run_harness
from tests.evidence_helpers import acked
from tests.test_bad_input import assert_one_line_error

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "packages"


def _scenario(tmp_path: Path, packages: list) -> Path:
    raw = yaml.safe_load((EXAMPLE / "packages.yaml").read_text())
    raw["applications"]["audit"]["packages"] = packages
    raw["applications"]["audit"]["cwd"] = str(EXAMPLE)
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def test_the_packages_in_a_jobs_builder_are_found_and_the_ones_spark_has_are_the_harnesss():
    found = load_scenario(EXAMPLE / "packages.yaml").blueprint.streamlets["audit"].settings["packages"]
    assert found == ["org.apache.spark:spark-sql-kafka-0-10_2.12:3.5.1", "org.postgresql:postgresql:42.7.4"]
    connector, driver = (parse(p, "x")[0] for p in found)
    assert connector.served and not driver.served
    assert refusal(connector, "2.13", "4.2.0") is None  # another Scala, but the harness's own serves it
    assert refusal(Package("org.apache.spark", "spark-avro_2.12", "3.5.0"), "2.13", "4.2.0") is None


@pytest.mark.parametrize(
    "packages, message",
    [
        (
            ["io.delta:delta-spark_2.12:3.2.0"],
            "applications.audit.packages: io.delta:delta-spark_2.12:3.2.0 is built for Scala 2.12; the drivers' "
            "Spark 4.2.0 runs Scala 2.13: name io.delta:delta-spark_2.13 at a release built for Spark 4.2",
        ),
        (["postgresql"], "applications.audit.packages[0]: 'postgresql' is not a package (expected group:artifact"),
        ([42], "applications.audit.packages[0]: expected group:artifact:version, got 42"),
    ],
)
def test_a_package_that_cannot_run_is_one_line(tmp_path, packages, message):
    with pytest.raises(HarnessError) as caught:
        load_scenario(_scenario(tmp_path, packages))
    assert message in str(caught.value) and "\n" not in str(caught.value), caught.value


@pytest.mark.e2e
def test_a_package_no_one_can_fetch_stops_the_run_before_anything_starts(tmp_path):
    out = tmp_path / "run"
    result = run_harness("run", str(_scenario(tmp_path, ["org.example.none:nothing:0.0.1"])), "--out", str(out))
    assert_one_line_error(
        result, "package org.example.none:nothing:0.0.1: not in the harness's cache and Maven cannot fetch it ("
    )
    events = [json.loads(line) for line in (out / "history.jsonl").read_text().splitlines()]
    assert not any(e["event"] == "process_started" for e in events)  # refused before anything started


@pytest.mark.e2e
def test_jobs_naming_their_packages_and_their_requirements_run_offline(tmp_path):
    """At once: the job naming its packages started with python, and with spark-submit; the job importing its own
    requirement."""

    def one(scenario: str) -> tuple[Path, dict, int]:
        out = tmp_path / scenario
        done = run_harness("run", str(EXAMPLE / f"{scenario}.yaml"), "--out", str(out), timeout=900)
        return out, json.loads((out / "report.json").read_text()), done.returncode

    with ThreadPoolExecutor(3) as pool:
        *runs, (retried, retried_report, retried_code) = list(
            pool.map(one, ["packages", "packages-submit", "requirements"])
        )
    assert retried_code == 0, (retried_report["outcome"], retried_report["gaps"], retried_report["expectations"])
    [installed] = [json.loads(line) for line in (retried / "history.jsonl").open() if "requirements_installed" in line]
    assert [p.split("==")[0] for p in installed["installed"]] == ["tenacity"] and installed["took_s"] >= 0
    copies = _orders(retried / "topics" / "orders-copied.jsonl")
    assert retried_report["counts"]["lost"] == len(acked(retried) - set(copies)) == 0
    assert retried_report["counts"]["duplicated_deliveries"] == sum(1 for n in copies.values() if n > 1)
    for out, report, code in runs:
        assert code == 0, (out, report["outcome"], report["gaps"], report["expectations"])
        log = (out / "logs" / "streamlet-audit.log").read_text()
        # Spark's Ivy read only the harness's repositories: the connector's alias, the JDBC driver fetched with Maven.
        assert "found org.postgresql#postgresql;42.7.4 in maven" in log, log[-2000:]
        assert "found org.apache.spark#spark-sql-kafka-0-10_2.12;3.5.1 in aliases" in log
        copies = _orders(out / "topics" / "orders-audited.jsonl")
        assert report["counts"]["lost"] == len(acked(out) - set(copies)) == 0
        assert report["counts"]["duplicated_deliveries"] == sum(1 for n in copies.values() if n > 1)


# A job's own requirements (harness/spark/requirements.py).


def test_a_jobs_requirements_are_installed_once_beside_the_drivers_pyspark(tmp_path, monkeypatch):
    import sys

    from harness.spark.requirements import install
    from harness.spark.versions import own_version

    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path / "cache"))
    # tenacity, as the example's; and a requirement that depends on pyspark: the drivers' own is kept, not a copy
    first = install(("tenacity>=8.2", "pyspark"), sys.executable, own_version(), "applications.x.requirements")
    assert not first.cached and [p.split("==")[0] for p in first.packages] == ["tenacity"], first
    assert not list(first.folder.glob("pyspark*")) and (first.folder / "tenacity" / "__init__.py").is_file()
    again = install(("tenacity>=8.2", "pyspark"), sys.executable, own_version(), "applications.x.requirements")
    assert again.cached and again.folder == first.folder and again.packages == first.packages
    with pytest.raises(HarnessError, match=r"^applications\.x\.requirements: pip cannot install them \(") as caught:
        install(
            ("no-such-package-of-the-harness==0.0.1",), sys.executable, own_version(), "applications.x.requirements"
        )
    assert "\n" not in str(caught.value) and not list((tmp_path / "cache" / "requirements").glob(".*"))


@pytest.mark.parametrize(
    "requirements, message",
    [
        ("missing.txt", "applications.audit.requirements: missing.txt: cannot be read"),
        (["-r other.txt"], "'-r other.txt': pip's options are not read here"),
        ({"tenacity": 8}, "expected a requirements file or a list of requirements"),
    ],
)
def test_requirements_that_cannot_be_read_are_one_line(tmp_path, requirements, message):
    path = _scenario(tmp_path, [])
    raw = yaml.safe_load(path.read_text())
    raw["applications"]["audit"]["requirements"] = requirements
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(HarnessError) as caught:
        load_scenario(path)
    assert message in str(caught.value) and "\n" not in str(caught.value), caught.value


def test_harness_jars_serves_what_a_scenarios_jobs_ask_for_ahead_of_its_run(tmp_path, monkeypatch):
    from harness.spark.packages import prefetch

    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path))
    apps = {"audit": {"packages": ["org.apache.spark:spark-avro_2.12:3.5.0"], "requirements": []}, "other": {}}
    assert prefetch(apps, "python", "4.2.0") == [
        "audit: its packages org.apache.spark:spark-avro_2.12:3.5.0 served offline"
    ]
    alias = tmp_path / "packages" / "aliases" / "org" / "apache" / "spark" / "spark-avro_2.12" / "3.5.0"
    assert sorted(p.name for p in alias.iterdir()) == ["spark-avro_2.12-3.5.0.jar", "spark-avro_2.12-3.5.0.pom"]
    settings = (tmp_path / "packages" / "ivysettings.xml").read_text()
    assert alias.parents[4].as_uri() in settings and "/.m2/repository" in settings


def _orders(dump: Path) -> Counter:
    """(key, seq) of each order in a topic's recording (its order_id "key-seq")."""
    ids = [json.loads(line)["value"]["order_id"] for line in dump.open()]
    return Counter((k, int(s)) for k, _, s in (i.rpartition("-") for i in ids) if s.isdigit())


def test_the_scenarios_packages_reach_a_job_whose_builder_names_none_under_python_too(tmp_path):
    """Under python a job whose builder names its packages passes them itself; one naming none (a team's
    `spark-submit --packages` habit, moved into the scenario) is given them in its submit arguments."""
    from harness.runner.applications import SUBMIT_ARGS, application_command
    from harness.spark.versions import runtime

    names = ("org.postgresql:postgresql:42.7.4",)
    for builder, given in ((False, True), (True, False)):
        _, env = application_command(
            ["python", "job.py"], {}, runtime(None), tmp_path, tmp_path, names=names, builder_packages=builder
        )
        assert (f"spark.jars.packages={names[0]}" in env[SUBMIT_ARGS]) is given, env[SUBMIT_ARGS]
        assert "spark.jars.ivySettings=" in env[SUBMIT_ARGS]
