"""The Docker backend on a real engine: brokers as containers faulted through the Docker SDK, a compose stack's
broker faulted by name with nothing else touched, and docker-compose.yml run for real.

All Docker tests are in this one file: with pytest-xdist's --dist loadfile they share one worker, so at most one
dockerd is started for them (and stopped after them). Without an engine and without root to start one they are
skipped with the reason.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from harness.cluster import KafkaAdmin
from harness.cluster.access import KafkaAccess
from harness.docker import images
from harness.docker.engine import CLUSTER_LABEL, client
from harness.process import free_ports
from harness.semantics import satisfies
from tests.conftest import run_harness, unavailable
from tests.docker_engine import DockerEngine
from tests.evidence_helpers import acked, egress_counts
from tests.test_security import THEIR_KAFKA

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def engine():
    """An engine that answers, with the harness's images built (the first time: about a minute)."""
    local = DockerEngine()
    reason = local.unavailable_reason()
    if reason:
        local.stop()
        unavailable(f"no Docker engine: {reason}")
    try:
        docker = client()
        before = {c.id for c in docker.containers.list(all=True)}
        images.ensure(docker, ("base", "kafka", "runner"), say=lambda line: None)
        yield docker
        left = [c.name for c in docker.containers.list(all=True) if c.id not in before]
        assert not left, f"containers left behind: {left}"
    finally:
        local.stop()
    assert local.started is None or not local.started.running(), "the dockerd started for the tests is still running"


def _history(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]


@pytest.mark.long  # three secured brokers in containers; a container faulted by name: the compose test
@pytest.mark.timeout(900)  # its run's own deadline (run_harness) is 900 s
def test_broker_containers_killed_paused_and_stopped_lose_nothing_acknowledged(engine, tmp_path):
    run_dir = tmp_path / "run"
    result = run_harness("run", "scenarios/docker-brokers.yaml", "--out", str(run_dir), timeout=900)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]

    # Counted here from the raw evidence: every acknowledged record is in the egress's table.
    sent, stored = acked(run_dir), set(egress_counts(run_dir, "egress", "records"))
    assert sent and not sent - stored

    events = _history(run_dir)
    assert [(e["kind"], e["target"]) for e in events if e["event"] == "fault_begun"] == [
        ("broker-kill", "broker-2"),
        ("broker-pause", "broker-3"),
        ("broker-stop", "broker-1"),
    ]
    [paused] = [e for e in events if e["event"] == "process_paused"]
    assert "docker pause" in paused["signal"]
    restarted = {
        e["process"]: e["pid"] for e in events if e["event"] == "process_started" and e.get("role") == "broker"
    }
    assert restarted.keys() == {"broker-1", "broker-2", "broker-3"} and all(restarted.values())

    report = json.loads((run_dir / "report.json").read_text())
    assert satisfies(report["verdict"]["end_to_end"], "effectively-exactly-once") and report["counts"]["lost"] == 0
    assert all(f["recovery_s"] is not None for f in report["faults"]), report["faults"]
    assert json.loads((run_dir / "versions.json").read_text())["kafka_image"] == images.kafka_image().tag

    # The containers are gone, their logs kept: broker-2 started twice (killed), broker-1 stopped cleanly.
    assert not engine.containers.list(all=True, filters={"label": f"{CLUSTER_LABEL}={(run_dir / 'cluster').resolve()}"})
    logs = {n: (run_dir / "cluster" / f"node-{n}" / "broker.log").read_text() for n in (1, 2, 3)}
    assert logs[2].count("Kafka Server started") == 2
    assert "shut down completed" in logs[1] and logs[1].count("Kafka Server started") == 2

    # Secured (security: sasl_ssl): the containers' brokers spoke TLS among themselves, SASL_SSL to every client;
    # the user's password existed only in memory, and the private keys are gone.
    props = (run_dir / "cluster" / "node-1" / "server.properties").read_text()
    assert "CLIENT:SASL_SSL" in props and "INTERNAL:SSL" in props and "inter.broker.listener.name=INTERNAL" in props
    assert "over SASL_SSL as harness (SCRAM-SHA-256)" in result.stdout
    assert not [p for p in run_dir.rglob("*.pem") if b"PRIVATE KEY" in p.read_bytes()]


def _compose_command() -> list[str] | None:
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    probe = subprocess.run(["docker", "compose", "version"], capture_output=True) if shutil.which("docker") else None
    return ["docker", "compose"] if probe is not None and probe.returncode == 0 else None


@pytest.fixture
def compose(engine, tmp_path):
    """docker-compose.yml's kafka-1 up on free ports, as a project of its own; down (volumes too) after."""
    command = _compose_command()
    if command is None:
        unavailable("neither docker-compose nor the docker compose plugin is installed")
    port, controller = free_ports(2)
    env = {**os.environ, "PWD": str(ROOT), "KAFKA_1_PORT": str(port), "KAFKA_1_CONTROLLER_PORT": str(controller)}
    project = f"harness-test-{port}"
    base = [*command, "-f", str(ROOT / "docker-compose.yml"), "-p", project]

    def run(*args, timeout=300) -> subprocess.CompletedProcess:
        return subprocess.run([*base, *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=timeout)

    try:
        up = run("up", "-d", "kafka-1")
        assert up.returncode == 0, up.stderr[-3000:]
        KafkaAccess(f"127.0.0.1:{port}").check(timeout=120)  # the container formats its storage, then starts Kafka
        yield run, f"127.0.0.1:{port}", project
    finally:
        run("--profile", "harness", "down", "-v", "--remove-orphans")


def _kafka_1(engine, project: str):
    [container] = engine.containers.list(
        filters={"label": [f"com.docker.compose.project={project}", "com.docker.compose.service=kafka-1"]}
    )
    return container


@pytest.mark.long
def test_docker_compose_runs_the_harness_in_a_container_against_its_broker(engine, compose, tmp_path):
    run, bootstrap, project = compose
    run_dir = tmp_path / "run"  # mounted into the harness's container at its own path, as the repository is
    result = run(
        "run",
        "--rm",
        "-v",
        f"{tmp_path}:{tmp_path}",
        "harness",
        "run",
        "scenarios/compose.yaml",
        "--bootstrap-servers",
        bootstrap,
        "--out",
        str(run_dir),
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    report = json.loads((run_dir / "report.json").read_text())
    assert satisfies(report["verdict"]["end_to_end"], "effectively-exactly-once") and report["counts"]["lost"] == 0
    sent, stored = acked(run_dir), set(egress_counts(run_dir, "egress", "records"))
    assert sent and not sent - stored
    # It ran on the compose broker, in its namespace there.
    with KafkaAdmin(bootstrap) as admin:
        assert any(t.startswith(f"harness.{run_dir.name}.") for t in admin.topics())


def test_a_compose_brokers_container_is_faulted_by_name_and_nothing_else_is_touched(engine, compose, tmp_path):
    run, bootstrap, project = compose
    broker = _kafka_1(engine, project)
    bystander = engine.containers.run(
        images.base_image().tag,
        ["sleep", "600"],
        detach=True,
        network_mode="host",
        labels={"harness-test": "bystander"},
    )
    try:
        bystander.reload()
        before = (bystander.status, bystander.attrs["State"]["StartedAt"], bystander.attrs["State"]["Pid"])
        assert before[0] == "running"
        scenario = yaml.safe_load((ROOT / "scenarios" / "compose.yaml").read_text())
        scenario.update(
            name="compose-faulted",
            cluster={"bootstrap_servers": bootstrap, "docker": {"containers": [broker.name]}},
            faults=[
                {"kind": "broker-pause", "target": "broker-1", "start_s": 8, "paused_s": 6},
                {"kind": "broker-stop", "target": "broker-1", "start_s": 18, "down_s": 1},
            ],
        )
        scenario["workload"].update(duration_s=20, after_faults_s=5)
        path = tmp_path / "faulted.yaml"
        path.write_text(yaml.safe_dump(scenario))
        result = run_harness("run", str(path), "--out", str(tmp_path / "run"), timeout=600)
        assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
        assert f"broker-1 = container {broker.name}" in result.stdout

        events = _history(tmp_path / "run")
        assert [e["kind"] for e in events if e["event"] == "fault_begun"] == ["broker-pause", "broker-stop"]
        broker.reload()
        assert broker.status == "running"  # left as found
        bystander.reload()
        assert (bystander.status, bystander.attrs["State"]["StartedAt"], bystander.attrs["State"]["Pid"]) == before
        assert (tmp_path / "run" / "logs" / f"broker-1-{broker.name}.log").stat().st_size > 0
    finally:
        bystander.remove(force=True)


def test_clean_removes_the_broker_containers_a_killed_harness_left_and_keeps_their_logs(engine, tmp_path):
    """Of another Kafka than the harness's own (its image built from that version's jars)."""
    run_dir = tmp_path / "run"
    up = run_harness(
        "cluster", "up", "--docker", "--kafka-version", THEIR_KAFKA, "--dir", str(run_dir / "cluster"), timeout=600
    )
    assert up.returncode == 0, up.stderr[-3000:]  # the process that started them is gone, as a killed harness's
    assert f"Kafka {THEIR_KAFKA} up: 1 broker(s)" in up.stderr
    labelled = {"label": f"{CLUSTER_LABEL}={(run_dir / 'cluster').resolve()}"}
    [container] = engine.containers.list(filters=labelled)
    assert container.image.tags == [f"harness/kafka:{THEIR_KAFKA}"]
    result = run_harness("clean", str(run_dir))
    assert result.returncode == 0 and f"container {container.name}" in result.stdout, result.stdout + result.stderr
    assert not engine.containers.list(all=True, filters=labelled)
    assert "Kafka Server started" in (run_dir / "cluster" / "node-1" / "broker.log").read_text()
