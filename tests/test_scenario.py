"""Scenario files and the workload plan: validated before anything starts, deterministic by seed."""

from __future__ import annotations

import itertools
import textwrap
from pathlib import Path

import pytest

from harness.scenario.fields import parse_size
from harness.scenario.parse import ScenarioError, load_scenario
from harness.spark import versions
from harness.workload.generator import record_plan
from harness.workload.generator_settings import WorkloadSettings
from tests.conftest import run_harness

ROOT = Path(__file__).resolve().parent.parent
OTHER_SPARK = versions.other_versions()[0]

GOOD = textwrap.dedent("""
    name: ok
    blueprint:
      streamlets:
        ingress: {kind: ingress}
        egress: {kind: egress}
      connections:
        ingress.out: [egress.in]
    workload: {rate: 50, duration_s: 5}
""")

BAD = [
    ("empty", "", "the file is empty"),
    ("bad yaml", "name: [unclosed", "not valid YAML at line 1"),
    ("wrong type", GOOD.replace("rate: 50", "rate: fast"), "workload.rate: expected int or float, got 'fast'"),
    ("unknown field", GOOD + "colour: red\n", "scenario.colour: unknown field"),
    (
        "recordings form",
        GOOD + "evidence: {recordings: parquet}\n",
        "evidence.recordings: expected one of json, columnar, got 'parquet'",
    ),
    (
        "evidence budget",
        GOOD + "evidence: {budget: lots}\n",
        "evidence.budget: expected a size like 500MB, 2GB or 1.5GiB, got 'lots'",
    ),
    (
        "evidence budget too small",
        GOOD + "evidence: {budget: 10KB}\n",
        "evidence.budget: expected at least 1,000,000 bytes, got 10,000",
    ),
    (
        "more workers than keys",
        GOOD.replace("rate: 50", "rate: 50, keys: 2, workers: 3"),
        "workload.workers: 3 workers for 2 keys: each needs a key",
    ),
    ("no workers", GOOD.replace("rate: 50", "rate: 50, workers: 0"), "workload.workers: expected a value from 1"),
    ("missing blueprint", "name: x\nworkload: {}\n", "scenario.blueprint: required field is missing"),
    (
        "share out of range",
        GOOD.replace("rate: 50", "late_share: 2"),
        "workload.late_share: expected a value from 0 to 1, got 2",
    ),
    (
        "unknown streamlet in options",
        GOOD + "source_options:\n  processor: {trigger: availableNow}\n",
        "source_options.processor: unknown streamlet 'processor'",
    ),
    (
        "bad trigger",
        GOOD + "source_options:\n  egress: {trigger: sometimes}\n",
        "source_options.egress.trigger: expected one of default, processingTime, availableNow",
    ),
    ("bad store", GOOD + "store: mysql://x\n", "store: expected sqlite or a postgresql:// URL"),
    ("faults not a list", GOOD + "faults: {kind: kill-driver}\n", "faults: expected list, got"),
    (
        "unknown fault kind",
        GOOD + "faults:\n  - {kind: meteor, target: egress}\n",
        "faults[0].kind: expected one of add-partitions, broker-kill, broker-pause, broker-stop, damage-checkpoint",
    ),
    (
        "unknown streamlet in a fault",
        GOOD + "faults:\n  - {kind: kill-driver, target: processor}\n",
        "faults[0].target: unknown streamlet 'processor' (declared: ingress, egress)",
    ),
    (
        "missing fault target",
        GOOD + "faults:\n  - {kind: kill-driver}\n",
        "faults[0].target: required field is missing",
    ),
    (
        "bad signal",
        GOOD + "faults:\n  - {kind: kill-driver, target: egress, signal: SIGHUP}\n",
        "faults[0].signal: expected one of SIGKILL, SIGTERM, got 'SIGHUP'",
    ),
    (
        "bad checkpoint damage",
        GOOD + "faults:\n  - {kind: damage-checkpoint, target: egress, damage: all}\n",
        "faults[0].damage: expected one of metadata, last-commit, last-batch, cut-offsets, cut-commit, state-version",
    ),
    (
        "negative pause",
        GOOD + "faults:\n  - {kind: pause-driver, target: egress, paused_s: -1}\n",
        "faults[0].paused_s: expected a value of at least 0, got -1",
    ),
    (
        "unknown fault field",
        GOOD + "faults:\n  - {kind: broker-pause, target: broker-1, down_s: 3}\n",
        "faults[0].down_s: unknown field",
    ),
    (
        "broker out of range",
        GOOD + "faults:\n  - {kind: broker-kill, target: broker-2}\n",
        "faults[0].target: broker-kill needs a broker of the embedded cluster (broker-1), got 'broker-2'",
    ),
    (
        "times without period",
        GOOD + "faults:\n  - {kind: kill-driver, target: egress, times: 3}\n",
        "faults[0].every_s: required when times is 3",
    ),
    (
        "crash needs a processor",
        GOOD + "faults:\n  - {kind: executor-crash, target: egress, probability: 0.1}\n",
        "faults[0].target: executor-crash needs a streamlet of kind processor, 'egress' is egress",
    ),
    (
        "crash is not scheduled",
        GOOD.replace("egress: {kind: egress}", "p: {kind: processor}\n    egress: {kind: egress}").replace(
            "ingress.out: [egress.in]", "ingress.out: [p.in]\n    p.out: [egress.in]"
        )
        + "faults:\n  - {kind: executor-crash, target: p, probability: 0.1, start_s: 5}\n",
        "faults[0].start_s: unknown field",
    ),
    (
        "a fault kind's module is missing",
        GOOD + "faults:\n  - {kind: 'nowhere.faults:KIND', target: egress}\n",
        "faults[0].kind: cannot import 'nowhere.faults': no such module on the import paths",
    ),
    (
        "a fault kind's attribute is no kind",
        GOOD + "faults:\n  - {kind: 'harness.faults:Param', target: egress}\n",
        "faults[0].kind: harness.faults:Param is not a fault kind (a harness.faults.FaultKind), it is a type",
    ),
    (
        "the generator has a link, not a driver",
        GOOD + "faults:\n  - {kind: kill-driver, target: generator}\n",
        "faults[0].target: unknown streamlet 'generator' (declared: ingress, egress)",
    ),
    (
        "a link of no streamlet",
        GOOD + "faults:\n  - {kind: network-delay, target: processor}\n",
        "faults[0].target: unknown streamlet 'processor' (declared: ingress, egress or generator)",
    ),
    (
        "broker faults on a cluster one runs need its containers",
        GOOD + "cluster: {bootstrap_servers: '127.0.0.1:9'}\nfaults:\n  - {kind: broker-kill, target: broker-1}\n",
        "faults[0].kind: broker-kill needs brokers the harness can fault: on a cluster you run, list their "
        "containers in "
        "cluster.docker.containers",
    ),
    (
        "a container the list does not have",
        GOOD + "cluster: {bootstrap_servers: '127.0.0.1:9', docker: {containers: [k1, k2]}}\n"
        "faults:\n  - {kind: broker-pause, target: broker-3}\n",
        "faults[0].target: broker-pause needs a container of cluster.docker.containers (broker-1, broker-2), got "
        "'broker-3'",
    ),
    (
        "containers without a cluster of one's own",
        GOOD + "cluster: {docker: {containers: [k1]}}\n",
        "cluster.docker.containers: only with cluster.bootstrap_servers (a cluster you run)",
    ),
    (
        "an image for a cluster one runs",
        GOOD + "cluster: {bootstrap_servers: '127.0.0.1:9', docker: {image: x}}\n",
        "cluster.docker.image: the harness starts no broker on a cluster you run",
    ),
    (
        "containers named twice",
        GOOD + "cluster: {bootstrap_servers: '127.0.0.1:9', docker: {containers: [k1, k1]}}\n",
        "cluster.docker.containers: expected the names of your broker containers, each once, got ['k1', 'k1']",
    ),
    (
        "an unknown docker field",
        GOOD + "cluster: {docker: {network: bridge}}\n",
        "cluster.docker.network: unknown field",
    ),
    (
        "a kafka section for the plaintext embedded cluster",
        GOOD + "kafka: {security_protocol: SSL}\n",
        "kafka: the embedded cluster speaks plaintext: add cluster.security (sasl_ssl or ssl)",
    ),
    (
        "an unknown security protocol",
        GOOD + "cluster: {bootstrap_servers: '127.0.0.1:9'}\nkafka: {security_protocol: TLS}\n",
        "kafka.security_protocol: expected one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL, got 'TLS'",
    ),
    (
        "SASL without a password",
        GOOD + "cluster: {bootstrap_servers: '127.0.0.1:9'}\nkafka: {security_protocol: SASL_SSL, username: app}\n",
        "kafka.password: required with security_protocol SASL_SSL",
    ),
    (
        "a password reference of neither kind",
        GOOD + "cluster: {bootstrap_servers: '127.0.0.1:9'}\n"
        "kafka: {security_protocol: SASL_SSL, username: app, password: {vault: x}}\n",
        "kafka.password.vault: unknown field",
    ),
    (
        "a user without SASL",
        GOOD + "cluster: {bootstrap_servers: '127.0.0.1:9'}\nkafka: {security_protocol: SSL, username: app}\n",
        "kafka.username: not used with security_protocol SSL",
    ),
    (
        "a missing CA file",
        GOOD + "cluster: {bootstrap_servers: '127.0.0.1:9'}\nkafka: {security_protocol: SSL, ca_file: nowhere.pem}\n",
        "kafka.ca_file: no such file: ",
    ),
    (
        "the embedded cluster's protocol",
        GOOD + "cluster: {security: sasl_ssl}\nkafka: {security_protocol: SSL}\n",
        "kafka.security_protocol: the embedded cluster with security sasl_ssl speaks SASL_SSL, not SSL",
    ),
    (
        "PLAIN on the embedded cluster",
        GOOD + "cluster: {security: sasl_ssl}\n"
        "kafka: {security_protocol: SASL_SSL, sasl_mechanism: PLAIN, username: a, password: {env: X}}\n",
        "kafka.sasl_mechanism: the embedded cluster creates SCRAM users: SCRAM-SHA-256 or SCRAM-SHA-512",
    ),
    (
        "security for a cluster one runs",
        GOOD + "cluster: {bootstrap_servers: '127.0.0.1:9', security: sasl_ssl}\n",
        "cluster.security: secures the embedded cluster; for a cluster you run (cluster.bootstrap_servers), say how "
        "to reach it",
    ),
    (
        "network faults need the embedded cluster",
        GOOD + "cluster: {bootstrap_servers: '127.0.0.1:9'}\n"
        "faults:\n  - {kind: network-partition, target: generator}\n",
        "faults[0].kind: network-partition needs the embedded cluster; this scenario uses cluster.bootstrap_servers",
    ),
    (
        "Kafka's requests cannot be read through TLS",
        GOOD + "cluster: {security: ssl}\nfaults:\n  - {kind: kafka-error, target: generator}\n",
        "faults[0].kind: kafka-error reads Kafka's requests on the wire; its listeners speak TLS (ssl)",
    ),
    (
        "a delayed response with no delay",
        GOOD + "faults:\n  - {kind: kafka-error, target: generator, action: delay-response}\n",
        "faults[0].delay_ms: delay-response holds each one delay_ms: give it",
    ),
    (
        "bandwidth of nothing",
        GOOD + "faults:\n  - {kind: network-bandwidth, target: egress, bytes_per_s: 0}\n",
        "faults[0].bytes_per_s: expected a value of at least 1, got 0",
    ),
    (
        "executor loss needs a Spark cluster",
        GOOD + "faults:\n  - {kind: executor-kill, target: egress}\n",
        "faults[0].kind: executor-kill needs the Spark standalone cluster the harness starts (cluster.spark.master: "
        "standalone), this scenario's master is local",
    ),
    (
        "a worker the cluster does not have",
        GOOD + "cluster: {spark: {master: standalone, workers: 2}}\n"
        "faults:\n  - {kind: worker-kill, target: worker-3}\n",
        "faults[0].target: worker-kill needs a worker of the Spark standalone cluster (worker-1, worker-2), got "
        "'worker-3'",
    ),
    (
        "an unknown Spark master",
        GOOD + "cluster: {spark: {master: yarn}}\n",
        "cluster.spark.master: expected local, standalone, or a spark:// or k8s:// URL, got 'yarn'",
    ),
    (
        "workers of a cluster not started here",
        GOOD + "cluster: {spark: {master: 'spark://127.0.0.1:7077', workers: 2}}\n",
        "cluster.spark.workers: only for master: standalone (a cluster the harness starts)",
    ),
    (
        "negative delay",
        GOOD + "faults:\n  - {kind: redeploy, target: egress, down_s: -1}\n",
        "faults[0].down_s: expected a value of at least 0, got -1",
    ),
    (
        "bad guarantee",
        GOOD + "expectations: {end_to_end: mostly-once}\n",
        "expectations.end_to_end: expected one of exactly-once, effectively-exactly-once, at-least-once",
    ),
    (
        "bad exact verdict",
        GOOD + "expectations: {verdict: sometimes}\n",
        "expectations.verdict: expected one of exactly-once, effectively-exactly-once, at-least-once",
    ),
    (
        "bad redeploy checkpoint",
        GOOD + "faults:\n  - {kind: redeploy, target: egress, checkpoint: shred}\n",
        "faults[0].checkpoint: expected one of delete, keep, got 'shred'",
    ),
    (
        "unknown hop",
        GOOD + "expectations: {per_hop: {nowhere: exactly-once}}\n",
        "expectations.per_hop.nowhere: unknown hop 'nowhere' (intermediate topics and egresses: egress, ingress-out)",
    ),
    (
        "after-write needs SIGKILL",
        GOOD + "faults:\n  - {kind: kill-driver, target: egress, signal: SIGTERM, at: after-write}\n",
        "faults[0].at: after-write needs signal SIGKILL (a graceful stop would finish the batch)",
    ),
    (
        "unknown kill moment",
        GOOD + "faults:\n  - {kind: kill-driver, target: egress, at: sometime}\n",
        "faults[0].at: expected one of anytime, after-write",
    ),
    ("unknown expectation", GOOD + "expectations: {fast: true}\n", "expectations.fast: unknown field"),
    (
        "bad loss cause",
        GOOD + "expectations: {lost_causes: [gremlins]}\n",
        "expectations.lost_causes[0]: expected one of leader_truncated, retention, redeploy, topic_recreated, "
        "watermark, query_failed, got 'gremlins'",
    ),
    (
        "unknown spark version",
        GOOD + "cluster: {spark: {version: 2.4.8}}\n",
        f"cluster.spark.version: Spark 2.4.8: not one the drivers can run on (known: "
        f"{', '.join(versions.known_versions())})",
    ),
    (
        "a published spark whose connector is not served",
        GOOD + "cluster: {spark: {version: 4.3.0}}\n",
        "cluster.spark.version: Spark 4.3.0 is published, its connector spark-sql-kafka-0-10_2.13 4.3.0 is not served",
    ),
    (
        "a kafka line the embedded cluster does not run",
        GOOD + "cluster: {kafka: {version: 2.8.2}}\n",
        "cluster.kafka.version: Kafka 2.8.2: the embedded cluster runs the lines 3.9, 4.0, 4.1, 4.2, 4.3, 4.4",
    ),
    (
        "a feature its kafka has not",
        GOOD + "cluster: {kafka: {version: 3.9.1, features: {eligible.leader.replicas.version: 1}}}\n",
        "cluster.kafka.features.eligible.leader.replicas.version: Kafka 3.9.1 has no such feature (settable: "
        "transaction.version)",
    ),
    (
        "a feature level its kafka has not",
        GOOD + "cluster: {kafka: {version: 3.9.1, features: {transaction.version: 2}}}\n",
        "cluster.kafka.features.transaction.version: Kafka 3.9.1 has levels 0 to 0, not 2",
    ),
    (
        "a kafka version for a cluster one runs",
        GOOD + "cluster: {bootstrap_servers: '127.0.0.1:9', kafka: {version: 3.9.1}}\n",
        "cluster.kafka: a cluster you run has its own version and features (versions.json asks its brokers)",
    ),
    (
        "acks 1 from an idempotent producer",
        GOOD.replace("workload: {rate: 50, duration_s: 5}", "workload: {rate: 50, duration_s: 5, acks: 1}"),
        "workload.acks: an idempotent producer writes with acks all; add idempotence: false",
    ),
    (
        "acks 0",
        GOOD.replace("workload: {rate: 50, duration_s: 5}", "workload: {rate: 50, duration_s: 5, acks: 0}"),
        "workload.acks: expected all or 1, got 0",
    ),
    (
        "other spark on the harness's cluster",
        GOOD + f"cluster: {{spark: {{version: {OTHER_SPARK}, master: standalone}}}}\n",
        "cluster.spark.version: the standalone cluster the harness starts runs its own Spark "
        f"({versions.own_version()}), not {OTHER_SPARK}",
    ),
    (
        "re-create an intermediate topic",
        GOOD + "faults:\n  - {kind: recreate-topic, target: egress, start_s: 3}\n",
        "faults[0].target: recreate-topic needs a streamlet reading the source topic, 'egress' reads a topic of the "
        "pipeline",
    ),
    (
        "headers kept without headers",
        GOOD + "expectations: {headers_kept: true}\n",
        "expectations.headers_kept: the source records carry no header to keep: set workload.headers: true",
    ),
    (
        "abort every transaction",
        GOOD.replace(
            "workload: {rate: 50, duration_s: 5}", "workload: {rate: 50, duration_s: 5, transactions: {abort_every: 1}}"
        ),
        "workload.transactions.abort_every: 1 would abort every transaction",
    ),
    (
        "a negative time after the faults",
        GOOD.replace("workload: {rate: 50, duration_s: 5}", "workload: {rate: 50, duration_s: 5, after_faults_s: -2}"),
        "workload.after_faults_s: expected a value from 0 to",
    ),
    (
        "unknown isolation level",
        GOOD + "source_options: {ingress: {isolation_level: dirty}}\n",
        "source_options.ingress.isolation_level: expected one of read_committed, read_uncommitted, got 'dirty'",
    ),
]


def test_a_good_scenario_loads(tmp_path):
    (tmp_path / "s.yaml").write_text(GOOD)
    scenario = load_scenario(tmp_path / "s.yaml")
    assert scenario.workload.rate == 50 and scenario.blueprint.order() == ["ingress", "egress"]
    assert scenario.options_for("egress").fail_on_data_loss is True
    assert scenario.faults == () and "end_to_end" not in scenario.expectations


def test_faults_and_expectations_load_with_defaults(tmp_path):
    (tmp_path / "s.yaml").write_text(
        GOOD
        + textwrap.dedent("""
        faults:
          - {kind: kill-driver, target: egress, start_s: 1, every_s: 10, jitter_s: 2}
          - {kind: redeploy, target: ingress, start_s: 2, starting: latest}
        expectations: {end_to_end: at-least-once, max_lost: 0}
    """)
    )
    scenario = load_scenario(tmp_path / "s.yaml")
    kill, redeploy = scenario.faults
    assert (kill.every_s, kill.times, kill.params) == (
        10.0,
        None,
        {"signal": "SIGKILL", "restart_after_s": 3.0, "at": "anytime"},
    )
    assert (
        redeploy.params == {"starting": "latest", "timestamp_back_s": 0.0, "down_s": 3.0, "checkpoint": "delete"}
        and redeploy.times == 1
    )
    assert scenario.expectations == {"end_to_end": "at-least-once", "max_lost": 0}


def test_late_events_are_a_fault_or_the_same_fault_as_a_workload_setting_but_not_both(tmp_path):
    as_fault = GOOD + "faults:\n  - {kind: late-events, target: generator, share: 0.2, late_by_s: 30}\n"
    as_setting = GOOD.replace("rate: 50", "rate: 50, late_share: 0.2, late_by_s: 30")
    rules = []
    for name, text in (("fault", as_fault), ("setting", as_setting)):
        (tmp_path / f"{name}.yaml").write_text(text)
        [rule] = load_scenario(tmp_path / f"{name}.yaml").faults
        rules.append((rule.kind, rule.target, rule.params, rule.fault.scheduled))
    assert (
        rules[0] == rules[1] == ("late-events", "generator", {"share": 0.2, "late_by_s": 30.0, "after_s": 0.0}, False)
    )
    (tmp_path / "both.yaml").write_text(as_fault.replace("rate: 50", "rate: 50, late_share: 0.1"))
    with pytest.raises(ScenarioError, match="workload.late_share: late events are given twice"):
        load_scenario(tmp_path / "both.yaml")
    (tmp_path / "wrong.yaml").write_text(as_fault.replace("target: generator", "target: egress"))
    with pytest.raises(ScenarioError, match="late-events targets the workload's generator, got 'egress'"):
        load_scenario(tmp_path / "wrong.yaml")


@pytest.mark.parametrize("case,text,message", BAD, ids=[b[0] for b in BAD])
def test_bad_scenarios_name_file_and_field(tmp_path, case, text, message):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    assert str(err.value).startswith(f"{path}: ")
    assert message in str(err.value)


def test_cli_rejects_a_bad_scenario_with_one_line_and_starts_nothing(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(GOOD.replace("kind: egress", "kind: egres"))
    result = run_harness("pipeline", "run", str(path), "--out", str(tmp_path / "run"))
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"harness: error: {path}: blueprint.streamlets.egress.kind: unknown streamlet kind 'egres' "
        "(built-in: delta-sink, egress, file-sink, ingress, kafka-sink, processor, window-egress, windowed-count; "
        "a streamlet of your own is named package.module:Class)"
    )
    assert not (tmp_path / "run").exists()
    missing = run_harness("pipeline", "run", str(tmp_path / "nope.yaml"))
    assert missing.returncode == 2 and "no such scenario file" in missing.stderr


def test_same_seed_same_records_and_late_ones_only_after_the_warm_up():
    settings = WorkloadSettings("b", "t", "a", keys=5, seed=42, payload_bytes=8, late_share=0.5, late_after=20)
    first = list(itertools.islice(record_plan(settings), 200))
    assert first == list(itertools.islice(record_plan(settings), 200))
    other = WorkloadSettings("b", "t", "a", keys=5, seed=43, payload_bytes=8, late_share=0.5, late_after=20)
    assert first != list(itertools.islice(record_plan(other), 200))
    assert not any(late for *_, late in first[:20]) and any(late for *_, late in first[20:])
    for key in {k for k, *_ in first}:  # seq counts from 0 per key, without gaps
        assert [s for k, s, *_ in first if k == key] == list(range(sum(1 for k, *_ in first if k == key)))


def test_a_workers_plan_is_its_own_keys_and_the_workers_together_are_the_planned_records():
    from harness.workload.workers import worker_settings

    whole = WorkloadSettings("b", "t", "acks", keys=5, rate=100, duration_s=10.01, late_after=7, workers=3)
    parts = [worker_settings(whole, w, 1001) for w in range(3)]
    assert [p.max_records for p in parts] == [334, 334, 333] and [p.late_after for p in parts] == [3, 2, 2]
    assert [p.ack_log for p in parts] == ["acks/worker-00", "acks/worker-01", "acks/worker-02"]
    assert all(p.rate == 100 / 3 and p.duration_s is None for p in parts)
    for part in parts:
        plan = list(itertools.islice(record_plan(part), 300))
        assert plan == list(itertools.islice(record_plan(part), 300))  # deterministic by seed and worker
        assert {int(k[1:]) % 3 for k, *_ in plan} == {part.worker}


SHIPPED = [
    "baseline",
    "smoke",
    "driver-kill-append",
    "driver-kill-upsert",
    "driver-kill-dedup",
    "driver-kill-transactional",
    "executor-crash",
    "broker-bounce",
    "broker-pause",
    "retention-loss",
    "retention-fail",
    "redeploy-earliest",
    "redeploy-latest",
    "late-data",
    "nightly-soak",
    "file-sink-kills",
    "delta-sink-kills",
    "kafka-sink-in-flight",
    "avro-kills",
    "network-partition",
    "network-degraded",
    "spark-cluster-executor-loss",
    "compose",
    "docker-brokers",
    "secured",
    "overlap",
    "storm",
    "explore-append",
]


def test_every_shipped_scenario_is_valid_and_listed_with_its_description():
    result = run_harness("scenarios")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert {line.split()[0] for line in lines if not line.startswith(" ")} == set(SHIPPED)
    described = lines[lines.index(next(line for line in lines if line.startswith("driver-kill-append "))) + 1]
    assert described.startswith("    ") and "SIGKILLs" in described


def test_validate_checks_files_folders_and_shipped_names_and_starts_nothing(tmp_path):
    (tmp_path / "good.yaml").write_text(GOOD)
    (tmp_path / "typo.yaml").write_text(GOOD.replace("rate:", "rte:"))
    result = run_harness("validate", str(tmp_path), "smoke")
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"ok   {tmp_path / 'good.yaml'}: ok (2 streamlet(s), 0 fault rule(s))"
    assert lines[1].startswith(f"bad  {tmp_path / 'typo.yaml'}: workload.rte: unknown field (expected one of"), lines[1]
    assert lines[2].startswith(f"ok   {ROOT / 'scenarios' / 'smoke.yaml'}: smoke ")
    assert result.stderr.strip() == "harness: error: 1 scenario file(s) are not valid"
    assert run_harness("validate", str(tmp_path / "good.yaml")).returncode == 0


def test_a_shipped_scenario_runs_by_name_and_a_dry_run_prints_its_plan_and_starts_nothing(tmp_path):
    result = run_harness("run", "smoke", "--dry-run", "--out", str(tmp_path / "run"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("scenario smoke: valid; nothing started (--dry-run)\n")
    assert "  fault     kill-driver egress at 25s (signal=SIGKILL" in result.stdout
    assert not (tmp_path / "run").exists()
    missing = run_harness("run", "no-such-scenario", "--dry-run")
    assert missing.returncode == 2 and missing.stderr.strip() == (
        "harness: error: no-such-scenario: no such scenario file, and no shipped scenario of that name "
        "(harness scenarios)"
    )
    a_file = run_harness("check", str(ROOT / "README.md"))
    assert a_file.returncode == 2 and "README.md: a file, not a run directory" in a_file.stderr


def test_every_scenario_of_the_caveat_catalog_is_valid_names_its_source_and_expects_something():
    from harness.suite import suite_files

    catalog = ROOT / "scenarios" / "caveats" / "catalog.suite"
    files = suite_files(catalog)
    assert set(files) >= set((ROOT / "scenarios" / "caveats").glob("*.yaml")), "every caveat scenario is in the catalog"
    assert len(files) >= 12
    for path in files:
        scenario = load_scenario(path)
        assert "Caveat:" in scenario.description and "Source:" in scenario.description, path.name
        assert scenario.expectations != type(scenario.expectations)(), f"{path.name} expects nothing"


def test_every_built_in_fault_kind_is_listed_with_its_target_and_parameters():
    from harness.faults import builtin_fault_kinds

    result = run_harness("faults")
    assert result.returncode == 0, result.stderr
    listed = {line.split()[0] for line in result.stdout.splitlines() if not line.startswith(" ")}
    assert (
        listed
        == set(builtin_fault_kinds())
        >= {
            "kill-driver",
            "network-partition",
            "network-delay",
            "network-bandwidth",
            "network-reset",
            "broker-kill",
            "retention-shrink",
        }
    )
    assert "signal=SIGKILL (SIGKILL|SIGTERM)" in result.stdout and "bytes_per_s=20000" in result.stdout


def test_guarantees_are_ordered_by_strength():
    from harness.semantics import satisfies

    assert satisfies("exactly-once", "effectively-exactly-once") and satisfies("exactly-once", "at-most-once")
    assert satisfies("effectively-exactly-once", "at-least-once")
    assert not satisfies("at-least-once", "effectively-exactly-once")
    assert not satisfies("at-most-once", "at-least-once") and not satisfies("at-least-once", "at-most-once")
    assert satisfies("none", "none") and not satisfies("none", "at-most-once")


def test_a_kafka_section_is_saved_with_the_run_without_its_secrets_and_applied_to_every_client(tmp_path):
    """A password given in the scenario itself is saved as ***, a reference as itself; each client kind gets the
    same settings in its own terms, with the password only where it is handed over."""
    from pipelines.kafka_security import KafkaSecurity

    (tmp_path / "ca.pem").write_text("not read here")
    path = tmp_path / "s.yaml"
    path.write_text(
        GOOD + "cluster: {bootstrap_servers: '127.0.0.1:9'}\n"
        "kafka: {security_protocol: SASL_SSL, sasl_mechanism: SCRAM-SHA-512, username: app, password: hunter2,"
        " ca_file: ca.pem}\n"
    )
    scenario = load_scenario(path)
    assert scenario.raw["kafka"]["password"] == "***" and "hunter2" not in str(scenario.raw)
    assert scenario.kafka.password.resolve("kafka.password") == "hunter2" and "hunter2" not in repr(scenario.kafka)
    sec = KafkaSecurity("SASL_SSL", "SCRAM-SHA-512", 'a"b', str(tmp_path / "ca.pem"))
    spark = sec.spark_options('p"w')
    assert spark["kafka.sasl.jaas.config"] == (
        'org.apache.kafka.common.security.scram.ScramLoginModule required username="a\\"b" password="p\\"w";'
    )
    assert spark["kafka.ssl.truststore.type"] == "PEM" and spark["kafka.security.protocol"] == "SASL_SSL"
    assert sec.librdkafka("pw")["sasl.mechanism"] == "SCRAM-SHA-512" and sec.librdkafka("pw")[
        "ssl.ca.location"
    ].endswith("ca.pem")
    assert (
        sec.kafka_python("pw")["sasl_plain_password"] == "pw" and sec.kafka_python("pw")["ssl_check_hostname"] is True
    )
    assert KafkaSecurity().spark_options(None) == {"kafka.security.protocol": "PLAINTEXT"}


def test_an_evidence_budget_is_a_size_and_the_command_lines_overrides_the_scenarios_and_checks_its_own(tmp_path):
    assert [parse_size(v) for v in (2_000_000, "500MB", "2GB", "1.5GiB", "3 kib", "7")] == [
        2_000_000,
        500_000_000,
        2_000_000_000,
        1_610_612_736,
        3072,
        7,
    ]
    for bad in ("", "2 GBs", "-1GB", "0", 0, True, "1e9"):
        with pytest.raises(ValueError, match="expected a size like 500MB"):
            parse_size(bad)
    path = tmp_path / "s.yaml"
    path.write_text(GOOD + "evidence: {recordings: columnar, budget: 2GB}\n")
    assert load_scenario(path).evidence_budget_bytes == 2_000_000_000
    dry = run_harness("run", str(path), "--dry-run", "--evidence-budget", "300MB")
    assert (
        dry.returncode == 0 and "  evidence  columnar, budget 300 MB (the workload ends at 90% of it)\n" in dry.stdout
    )
    bad = run_harness("run", str(path), "--dry-run", "--evidence-budget", "10kB")
    assert bad.returncode == 2 and "expected at least 1,000,000 bytes, got 10,000" in bad.stderr
    too_often = run_harness("run", str(path), "--dry-run", "--judge-every", "1")
    assert too_often.returncode == 2 and "expected 0 (never) or at least 5 seconds, got 1" in too_often.stderr
