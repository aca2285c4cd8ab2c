"""The harness outside its clone: what it ships is in the package (scenarios, poms, Dockerfiles, the scaffold), what
it fetches goes to a cache (never site-packages or the working folder; a read-only seed of jars is used in place),
and it says in one line when the machine lacks what it needs. The whole path a new team takes, from an empty
folder through the wheel, `harness init` and the CI recipe's steps, is bench/new_team.py (make test-long)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from harness import jars
from harness.errors import HarnessError
from harness.paths import shipped
from harness.scaffold import FILES, TEMPLATES, scaffold
from harness.spark import versions
from tests.conftest import run_harness

ROOT = Path(__file__).resolve().parent.parent


def test_the_package_ships_the_scenarios_the_poms_the_dockerfiles_and_the_scaffold():
    for name in ("scenarios", "jars", "docker", "docs"):
        assert shipped(name) == (ROOT / name).resolve()  # in a clone: links to its folders
    assert (shipped("scenarios") / "smoke.yaml").is_file() and (shipped("jars") / "kafka" / "pom.xml").is_file()
    assert sorted(p.name for p in TEMPLATES.iterdir()) == sorted(FILES)
    for recipe in ("github-actions.yml", "gitlab-ci.yml", "install-harness.sh"):  # the scaffold's, not copies
        assert (ROOT / "examples" / "ci" / recipe).resolve() == (TEMPLATES / recipe).resolve()


def _wheel(folder: Path) -> Path:
    """The wheel built from this clone, as a user would build it."""
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(folder), str(ROOT)], check=True, timeout=600
    )
    [wheel] = folder.glob("*.whl")
    return wheel


# Long: a wheel built and installed (pyspark and all, pip's cache allowed) takes minutes before anything runs.
@pytest.mark.long
def test_the_wheel_carries_them_as_files_and_runs_from_an_empty_folder(tmp_path):
    """Built and installed as a user would, then used from a folder of nothing: validate, list, init, the jars
    (the seed's, in place), and a shipped scenario run by name."""
    wheel = _wheel(tmp_path / "dist")
    names = zipfile.ZipFile(wheel).namelist()
    for shipped_file in ("scenarios/smoke.yaml", "jars/kafka/pom.xml", "docker/kafka/Dockerfile", "docs/ci.md"):
        assert f"harness/shipped/{shipped_file}" in names
    assert {f"harness/templates/{t}" for t in FILES} <= set(names)
    assert not [n for n in names if n.startswith(("tests/", "examples/", "bench/"))]
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(wheel)], check=True, timeout=900)
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {**os.environ, "HARNESS_SEED_JARS": str(jars.jars_dir()), "HARNESS_CACHE": str(tmp_path / "cache")}
    env.pop("VIRTUAL_ENV", None)

    def harness(*args):
        return subprocess.run(
            [str(venv / "bin" / "harness"), *args], cwd=empty, env=env, capture_output=True, text=True, timeout=900
        )

    validated = harness("validate", "smoke")
    assert validated.returncode == 0 and "site-packages/harness/shipped/scenarios/smoke.yaml" in validated.stdout
    listed = harness("scenarios")
    assert listed.returncode == 0 and "smoke " in listed.stdout
    page = harness("docs", "ci")
    assert page.returncode == 0 and page.stdout.startswith("# The harness in CI")
    made = harness("init", "project")
    assert made.returncode == 0 and harness("validate", "project/scenarios").returncode == 0
    found = harness("jars")  # the seed's sets, used in place: nothing downloaded
    assert found.returncode == 0 and f"in {jars.jars_dir()}" in found.stdout, found.stdout + found.stderr
    assert not (tmp_path / "cache" / "jars" / "kafka").exists()
    ran = harness("run", "smoke", "--duration", "50", "--out", str(tmp_path / "smoke"))  # its last fault is at 45 s
    assert ran.returncode in (0, 1, 3) and "verdict: " in ran.stdout, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert sorted(p.name for p in empty.iterdir()) == ["project"]  # nothing else in the working folder


@pytest.mark.long
def test_a_new_team_goes_from_an_empty_folder_to_a_passing_gate(tmp_path):
    """bench/new_team.py: the release workflow's build from a clone, a virtualenv with its wheel, harness init,
    the install step refusing an unset source, the CI recipes' steps; the gate passes, its logs are uploaded."""
    env = {**os.environ, "HARNESS_SEED_JARS": str(jars.jars_dir())}
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "new_team.py"), "--folder", str(tmp_path / "team")],
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert "release: check them" in result.stdout and "github: gate" in result.stdout
    uploaded = re.search(r"uploaded files: \{'logs': (\d+), 'reports': (\d+), 'junit': (\d+)\}", result.stdout)
    assert uploaded and all(int(n) > 0 for n in uploaded.groups()), result.stdout[-2000:]


def test_a_seed_of_jars_is_used_in_place_and_a_missing_set_fetched_into_the_cache(tmp_path, monkeypatch):
    seed = jars.jars_dir()  # the clone's own, fetched by make
    monkeypatch.setenv("HARNESS_JARS_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HARNESS_SEED_JARS", str(seed))
    assert jars.jar_set("kafka")[0].parent == seed / "kafka"
    jars.fetch((jars.BROKER, versions.runtime(None).jars()))  # every set current in the seed: nothing written
    assert not (tmp_path / "cache").exists()
    monkeypatch.setenv("HARNESS_SEED_JARS", str(tmp_path / "no-seed"))
    with pytest.raises(HarnessError, match=f"kafka jars missing in {tmp_path / 'cache' / 'kafka'}"):
        jars.jar_set("kafka")


def test_a_pyspark_whose_connector_is_not_served_is_refused_in_one_line(tmp_path, monkeypatch):
    """Maven asked for real: 4.0.5's connector is not served here (nor 3.4's line known)."""
    monkeypatch.setenv("HARNESS_JARS_DIR", str(tmp_path / "cache"))
    unserved = versions.SparkRuntime("4.0.5", sys.executable, own=True)
    with pytest.raises(HarnessError) as refused:
        versions.fetch_connector(unserved)
    message = str(refused.value)
    assert message.startswith("Spark 4.0.5: its jars could not be fetched (verified: 3.5.7, 4.0.0, 4.1.1, 4.2.0)")
    assert "spark-sql-kafka-0-10_2.13:jar:4.0.5" in message and "\n" not in message, message
    assert not list((tmp_path / "cache").glob("spark-kafka-4.0.5*")), "nothing half-fetched is left as a set"
    unknown = r"^Spark 3.4.1: not a release line the harness knows \(3.5, 4.0, 4.1, 4.2\)$"
    with pytest.raises(HarnessError, match=unknown):
        versions.SparkRuntime("3.4.1", sys.executable, own=True).jars()


def test_an_old_java_is_refused_in_one_line(tmp_path, monkeypatch):
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("#!/bin/sh\necho 'openjdk version \"11.0.22\" 2024-01-16' >&2\n")
    java.chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    with pytest.raises(HarnessError, match=r'java: Java 17\+ is needed, found version "11'):
        jars.java_executable()


def test_init_writes_a_project_that_validates_and_overwrites_nothing(tmp_path):
    written = scaffold(tmp_path / "p")
    assert sorted(str(p.relative_to(tmp_path / "p")) for p in written) == sorted(FILES.values())
    result = run_harness("validate", str(tmp_path / "p" / "scenarios"))
    assert result.returncode == 0, result.stdout + result.stderr
    again = run_harness("init", str(tmp_path / "p"))
    assert again.returncode == 2 and again.stderr.strip().endswith(
        "exists already; harness init writes nothing over a file (move it away)"
    )


def _install_script(project: Path, **source: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")} | source
    return subprocess.run(
        ["bash", str(TEMPLATES / "install-harness.sh"), str(project / "venv")],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_recipes_install_step_needs_a_pinned_source_and_checks_a_wheels_sha256(tmp_path):
    refused = _install_script(tmp_path, HARNESS_INDEX_URL="https://pypi.example/simple")  # no version
    assert refused.returncode == 1 and "set HARNESS_WHEEL_URL and HARNESS_WHEEL_SHA256, or HARNESS_INDEX_URL and" in (
        refused.stderr
    )
    wheel = tmp_path / "dist" / "spark_kafka_harness-0.1.0-py3-none-any.whl"
    wheel.parent.mkdir()
    wheel.write_bytes(b"not what was pinned")
    tampered = _install_script(tmp_path, HARNESS_WHEEL_URL=wheel.as_uri(), HARNESS_WHEEL_SHA256="0" * 64)
    assert tampered.returncode == 1 and "does not have the sha256 HARNESS_WHEEL_SHA256 names" in tampered.stderr
    assert not (tmp_path / "venv").exists()  # nothing installed, not even the virtualenv


def test_the_docs_travel_with_the_harness_and_are_shown_by_topic():
    listed = run_harness("docs")
    assert listed.returncode == 0 and re.search(r"^ci +The harness in CI$", listed.stdout, re.M), listed.stdout
    page = run_harness("docs", "applications")
    assert page.returncode == 0 and page.stdout == (ROOT / "docs" / "applications.md").read_text()
    unknown = run_harness("docs", "nosuch")
    assert unknown.returncode == 2 and unknown.stderr.startswith("harness: error: docs: no topic 'nosuch'; the topics:")
    assert len(unknown.stderr.strip().splitlines()) == 1
