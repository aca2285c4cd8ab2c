"""Secured clusters, for real: SASL_SSL with SCRAM end to end, secrets kept out of every file and command line,
one-line errors for a wrong password or an untrusted certificate, and the namespace guard on a cluster the
harness did not create."""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
import subprocess
import threading
from collections import Counter
from pathlib import Path

import pytest
import yaml

from harness import jars
from harness.checker.check import check_run
from harness.checker.counts import COUNTS, VERDICT
from harness.cluster import EmbeddedCluster, KafkaAdmin, releases, tls
from harness.cluster.security import ClusterSecurity
from harness.errors import HarnessError
from tests.conftest import run_harness
from tests.evidence_helpers import acked, egress_counts
from tests.test_faults import history

pytestmark = pytest.mark.e2e
REPO = Path(__file__).resolve().parent.parent
THEIR_KAFKA = "3.9.1"  # a line the managed services still run


class CommandLines:
    """Every process's command line on the machine, sampled every 0.2 s while a run goes on: what `ps` shows."""

    def __init__(self):
        self.seen: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(0.2):
            for entry in Path("/proc").iterdir():
                try:
                    self.seen.add((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
                except OSError:
                    continue

    def __enter__(self) -> "CommandLines":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def files_containing(folder: Path, needle: str) -> list[str]:
    return [str(p) for p in folder.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


def _secured_run(tmp_path: Path, scenario: str, *options: str):
    """`harness run` of a scenario on the secured embedded cluster, its password unique (anywhere it appears, it
    leaked) and in the harness's environment only, while every command line on the machine is sampled; returns the
    password, the run directory, the command lines seen and the finished process."""
    password = "pw-" + secrets.token_hex(12)
    run_dir = tmp_path / "run"
    with CommandLines() as ps:
        done = run_harness(
            "run",
            scenario,
            *options,
            "--out",
            str(run_dir),
            env={**os.environ, "HARNESS_DEMO_KAFKA_PASSWORD": password},
            timeout=600,
        )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return password, run_dir, ps, done


@pytest.mark.long  # SASL_SSL in make test: the run on a secured cluster one runs, below
def test_a_driver_kill_run_on_a_sasl_ssl_cluster_is_judged_as_on_plaintext_and_no_secret_leaks(tmp_path):
    """scenarios/secured.yaml from the CLI, as a user runs it: the password only in the harness's environment."""
    password, run_dir, ps, done = _secured_run(tmp_path, "scenarios/secured.yaml", "--duration", "35")
    assert "SASL_SSL as pipeline (SCRAM-SHA-256)" in done.stdout

    # The brokers spoke SASL_SSL to clients and TLS among themselves; every client got through.
    props = (run_dir / "cluster" / "node-1" / "server.properties").read_text()
    assert "CLIENT:SASL_SSL" in props and "INTERNAL:SSL" in props and "CONTROLLER:SSL" in props
    assert "listener.name.internal.ssl.client.auth=required" in props

    # Counted here from the raw evidence: every acknowledged record is in the upsert egress's table, once.
    sent = acked(run_dir)
    stored = egress_counts(run_dir, "egress", "records")
    assert sent and set(stored) == sent and set(stored.values()) == {1}
    report = check_run(run_dir)
    assert report.passed and report[VERDICT] == "effectively-exactly-once"
    assert report[COUNTS].lost == 0 and report[COUNTS].acked == len(sent)

    # The secret: in no file of the run directory (history, logs, settings, reports, junit, the brokers' data),
    # on no command line seen while it ran; the brokers' private keys are gone, their certificates kept.
    assert files_containing(run_dir, password) == []
    assert files_containing(REPO / "reports", password) == []
    assert [c for c in ps.seen if password in c] == []
    assert any("pipelines.driver" in c for c in ps.seen) and any("kafka.Kafka" in c for c in ps.seen), (
        "the sampler saw the run"
    )
    assert files_containing(run_dir, "PRIVATE KEY") == []
    assert (run_dir / "cluster" / "tls" / "ca.pem").exists()
    print(
        f"secured run: {len(sent)} acked, verdict {report[VERDICT]}; {len(ps.seen)} command lines and "
        f"{sum(1 for p in run_dir.rglob('*') if p.is_file())} files scanned, no secret"
    )


@pytest.mark.long  # make test-long: a team's job on the secured cluster (its refusals: test_application_specs.py)
@pytest.mark.parametrize("scenario", ["scenario", "mtls", "world"])
def test_a_teams_job_setting_its_own_security_options_is_judged_and_no_secret_is_left(tmp_path, scenario):
    """examples/secured from the CLI: the job reads its protocol, mechanism, user and CA from ${kafka.*} and its
    password from its environment (SASL_SSL), or its protocol, CA and own key and certificate (mutual TLS), or
    dials the brokers by a name in its world; two SIGKILLs; every count equal to one made from the recorded output
    topic; no password nor private key left."""
    from harness.world.namespaces import refusal

    if scenario == "world" and refusal():
        pytest.skip(f"a world needs Linux namespaces: {refusal()}")
    password, run_dir, ps, _ = _secured_run(tmp_path, f"examples/secured/{scenario}.yaml")
    sent = acked(run_dir)
    lines = (run_dir / "topics" / "orders-screened.jsonl").read_text().splitlines()
    copies = Counter(json.loads(line)["value"]["order_id"].rpartition("-")[::2] for line in lines)
    copies = Counter({(k, int(s)): n for (k, s), n in copies.items()})
    report = check_run(run_dir)
    assert report[VERDICT] == "at-least-once" and report.passed
    assert report[COUNTS].lost == len(sent - set(copies)) == 0 and report[COUNTS].acked == len(sent)
    assert report[COUNTS].duplicated_deliveries == sum(1 for r, n in copies.items() if n > 1 and r in sent) > 0
    assert report[COUNTS].phantom == len(set(copies) - sent) == 0
    assert len([e for e in history(run_dir) if e["event"] == "fault_begun"]) == 2
    assert files_containing(run_dir, password) == [] and files_containing(REPO / "reports", password) == []
    assert [c for c in ps.seen if password in c] == [] and any("job.py" in c for c in ps.seen)
    assert files_containing(run_dir, "PRIVATE KEY") == []  # the client's key went with the cluster


# -- a secured cluster someone else runs ---------------------------------------------------------------------

THEIR_PASSWORD = "theirs-" + secrets.token_hex(8)
FOREIGN = {"source": {"retention.ms": "86400000"}, "ingested": {"cleanup.policy": "compact"}}


def produce(access, topic: str, values: list[str]) -> None:
    """Write `values` and wait for every acknowledgement (the producer goes with this call)."""
    from confluent_kafka import Producer

    producer = Producer(access.librdkafka())
    for value in values:
        producer.produce(topic, value=value)
    assert producer.flush(30) == 0


def keytool_truststore(ca_pem: Path, store: Path, password: str) -> Path:
    """A JKS truststore of `ca_pem`, as seed 004 builds one (the password in keytool's environment)."""
    keytool = Path(jars.java_executable()).with_name("keytool")
    subprocess.run(
        [
            str(keytool),
            "-importcert",
            "-noprompt",
            "-alias",
            "ca",
            "-file",
            str(ca_pem),
            "-keystore",
            str(store),
            "-storetype",
            "JKS",
            "-storepass:env",
            "STORE_PASSWORD",
        ],
        check=True,
        capture_output=True,
        env={**os.environ, "STORE_PASSWORD": password},
    )
    return store


@pytest.fixture(scope="module")
def theirs(tmp_path_factory):
    """A SASL_SSL cluster the harness did not create, of another Kafka than its own brokers', with a user, a JKS
    truststore and foreign topics named like the scenario's."""
    folder = tmp_path_factory.mktemp("theirs")
    cluster = EmbeddedCluster.create(
        folder / "cluster", brokers=1, security=ClusterSecurity("sasl_ssl"), kafka_version=THEIR_KAFKA
    )
    try:
        cluster.start()
        cluster.add_scram_user("app", THEIR_PASSWORD)
        access = cluster.client_access("app", THEIR_PASSWORD)
        with KafkaAdmin(access) as admin:
            for topic, config in FOREIGN.items():
                admin.create_topic(topic, partitions=2, configs=config)
        produce(access, "source", [f"theirs-{i}" for i in range(50)])
        keytool_truststore(cluster.tls_dir / "ca.pem", folder / "kafka.truststore.jks", "changeit")
        tls.issue_certificates(folder / "other-ca", [])  # a CA that signed none of their certificates
        keytool_truststore(folder / "other-ca" / "ca.pem", folder / "other.truststore.jks", "changeit")
        yield cluster, access, folder
    finally:
        cluster.close()


def foreign_state(access) -> dict:
    with KafkaAdmin(access) as admin:
        return {
            t: (sorted((o.partition, o.log_start, o.log_end) for o in admin.offsets([t])), admin.topic_config(t))
            for t in FOREIGN
        }


def external_scenario(folder: Path, cluster, password_env: str, truststore: str, **extra) -> Path:
    scenario = {
        "name": "theirs",
        "cluster": {"bootstrap_servers": cluster.bootstrap_servers},
        "kafka": {
            "security_protocol": "SASL_SSL",
            "sasl_mechanism": "SCRAM-SHA-256",
            "username": "app",
            "password": {"env": password_env},
            "truststore": {"path": truststore, "password": {"env": "THEIR_TRUSTSTORE_PASSWORD"}},
        },
        "blueprint": {
            "streamlets": {
                "ingress": {"kind": "ingress"},
                "egress": {"kind": "egress", "settings": {"mode": "upsert"}},
            },
            "connections": {"ingress.out": ["egress.in"]},
            "topics": {"ingress.out": {"name": "ingested"}},
        },
        "workload": {"rate": 100, "duration_s": 12, "after_faults_s": 6, "keys": 4},
        **extra,
    }
    path = folder / f"{password_env.lower()}-{Path(truststore).stem}.yaml"
    path.write_text(yaml.safe_dump(scenario))
    return path


@pytest.mark.parametrize(
    "password_env, truststore, expected",
    [
        ("THEIR_WRONG_PASSWORD", "kafka.truststore.jks", "authentication failed at 127.0.0.1:"),
        ("THEIR_PASSWORD", "other.truststore.jks", "TLS failed at 127.0.0.1:"),
    ],
)
def test_a_wrong_password_or_an_untrusted_certificate_is_one_line_and_nothing_starts(
    theirs, tmp_path, password_env, truststore, expected
):
    cluster, access, folder = theirs
    before = foreign_state(access)
    path = external_scenario(folder, cluster, password_env, truststore)
    env = {
        **os.environ,
        "THEIR_PASSWORD": THEIR_PASSWORD,
        "THEIR_WRONG_PASSWORD": THEIR_PASSWORD + "x",
        "THEIR_TRUSTSTORE_PASSWORD": "changeit",
    }
    done = run_harness("run", str(path), "--out", str(tmp_path / "run"), env=env, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    [line] = done.stderr.strip().splitlines()
    assert (
        line.startswith("harness: error: ") and expected in line and "over SASL_SSL as app (SCRAM-SHA-256)" in line
    ), line
    assert THEIR_PASSWORD not in done.stdout + done.stderr
    assert not (tmp_path / "run" / "progress").exists(), "nothing started"
    with KafkaAdmin(access) as admin:
        assert not [t for t in admin.topics() if t.startswith("harness.")], "no topic created"
    assert foreign_state(access) == before


def test_on_a_cluster_one_runs_only_the_runs_own_topics_change_and_foreign_namesakes_are_untouched(theirs, tmp_path):
    """A run over SASL_SSL through a JKS truststore (seed 004's setup) with a retention shrink and added partitions:
    the topics named like the scenario's but not in the run's namespace keep their offsets and configs; the admin
    refuses to touch them; the password is on no command line and in no file."""
    cluster, access, folder = theirs
    before = foreign_state(access)
    path = external_scenario(
        folder,
        cluster,
        "THEIR_PASSWORD",
        "kafka.truststore.jks",
        source_options={"egress": {"fail_on_data_loss": False}},
        faults=[
            {"kind": "retention-shrink", "target": "egress", "start_s": 6},
            {"kind": "add-partitions", "target": "ingress", "start_s": 4},
        ],
    )
    env = {**os.environ, "THEIR_PASSWORD": THEIR_PASSWORD, "THEIR_TRUSTSTORE_PASSWORD": "changeit"}
    run_dir = tmp_path / "run"
    with CommandLines() as ps:
        done = run_harness("run", str(path), "--out", str(run_dir), "--allow-unknown", env=env, timeout=600)
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]
    assert "only topics named harness." in done.stdout and "(any other is refused)" in done.stdout
    # The secrets: on no command line seen while it ran (the drivers and the generator get them in their
    # environment), in no file of the run directory or of the reports.
    assert any("pipelines.driver" in c for c in ps.seen), "the sampler saw the run"
    assert [c for c in ps.seen if THEIR_PASSWORD in c or "changeit" in c] == []
    assert files_containing(REPO / "reports", THEIR_PASSWORD) == []

    assert foreign_state(access) == before
    # Its version as its brokers tell it (the highest metadata.version they support), and its feature levels.
    versions = json.loads((run_dir / "versions.json").read_text())
    assert (versions["kafka_cluster"], versions["kafka_broker"]) == ("external", "3.9")
    assert versions["kafka_features"]["metadata.version"] == releases.LINES["3.9"].metadata_level
    run_id = run_dir.name
    with KafkaAdmin(access) as admin:
        own = {t for t in admin.topics() if t.startswith(f"harness.{run_id}.")}
        assert own == {f"harness.{run_id}.source", f"harness.{run_id}.ingested"}
        assert len(admin.partitions(f"harness.{run_id}.source")) > 2, "the run's own source topic got partitions"
    history = [json.loads(line) for line in (run_dir / "history.jsonl").open()]
    assert {e["kind"] for e in history if e["event"] == "fault_begun"} >= {"retention-shrink", "add-partitions"}
    assert files_containing(run_dir, THEIR_PASSWORD) == [] and files_containing(run_dir, "changeit") == []
    scenario_saved = json.loads((run_dir / "scenario.json").read_text())["scenario"]["kafka"]
    assert scenario_saved["password"] == {"env": "THEIR_PASSWORD"}

    # The guard itself: with the run's namespace, changing a foreign topic is refused before anything is sent.
    guarded = dataclasses.replace(access, namespace=f"harness.{run_id}.")
    with KafkaAdmin(guarded) as admin:
        for change in (
            lambda: admin.create_topic("payments"),
            lambda: admin.delete_topic("source"),
            lambda: admin.alter_topic_config("source", {"retention.ms": "1"}),
            lambda: admin.add_partitions("ingested", 4),
        ):
            with pytest.raises(HarnessError, match="refusing to .* the harness changes only its own topics"):
                change()
    assert foreign_state(access) == before


def test_mutual_tls_lets_in_a_client_with_the_clusters_certificate_and_refuses_one_without(tmp_path):
    """cluster.security: ssl: every client presents a certificate; one without is refused, in one line."""
    from dataclasses import replace

    from harness.cluster import read_topic
    from harness.cluster.access import KafkaAccess

    with EmbeddedCluster.create(tmp_path / "mtls", brokers=1, security=ClusterSecurity("ssl")) as cluster:
        cluster.start()
        props = (cluster.workdir / "node-1" / "server.properties").read_text()
        assert "CLIENT:SSL" in props and "listener.name.client.ssl.client.auth=required" in props
        access = cluster.client_access()
        with KafkaAdmin(access) as admin:
            admin.create_topic("signed", partitions=1)
        produce(access, "signed", [str(i) for i in range(20)])
        assert sorted(int(r.value) for r in read_topic(access, "signed")) == list(range(20))
        anonymous = KafkaAccess(access.bootstrap_servers, replace(access.security, keystore_file=None))
        with pytest.raises(HarnessError, match=r"^TLS failed at 127\.0\.0\.1:\d+ over SSL: .*certificate"):
            anonymous.check(timeout=10)
        cluster.close()
        cluster.forget_keys()
    assert files_containing(tmp_path / "mtls", "PRIVATE KEY") == []


def test_the_brokers_certificates_are_valid_for_the_names_the_jobs_worlds_dial(tmp_path):
    """examples/secured/world.yaml: its job dials kafka:9093 in its world; the run's CA issues the brokers'
    certificates for that name too, besides loopback's."""
    from cryptography import x509

    from harness.scenario.parse import parse_scenario
    from harness.scenario.world import broker_host_names
    from harness.world.namespaces import refusal

    if refusal():
        pytest.skip(f"no world here: {refusal()}")
    example = REPO / "examples" / "secured" / "world.yaml"
    scenario = parse_scenario(yaml.safe_load(example.read_text()), example.parent)
    names = broker_host_names(scenario.blueprint.streamlets)
    files = tls.issue_certificates(tmp_path, ["broker-1"], host_names=names)
    certificate = x509.load_pem_x509_certificates(files["broker-1"].read_bytes())[0]
    alt_names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names == ("kafka",) and alt_names.get_values_for_type(x509.DNSName) == ["localhost", "kafka"]
