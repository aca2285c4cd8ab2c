"""The embedded cluster: real Kafka brokers (KRaft) from Maven jars, real signals."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import replace

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from harness.chaos.health import health_problems, wait_healthy
from harness.cluster import EmbeddedCluster, KafkaAdmin, read_topic
from harness.errors import HarnessError
from harness.process import ProcessRecord
from harness.process.supervisor import session_members
from harness.waiting import wait_for
from tests.conftest import HARNESS, run_harness

pytestmark = pytest.mark.e2e


def _broker_pids(cluster_dir):
    return [ProcessRecord.load(p) for p in sorted((cluster_dir / "pids").glob("*.json"))]


# One broker is what every other test runs; three brokers start in test_sigkill_of_one_of_three_brokers_... (the
# cluster's own API): the command line's three is make test-long.
@pytest.mark.parametrize("brokers", [pytest.param("3", marks=pytest.mark.long)])
def test_cli_up_produce_consume_down(tmp_path, brokers):
    cluster_dir = tmp_path / "cluster"
    up = run_harness("cluster", "up", "--brokers", brokers, "--dir", str(cluster_dir))
    try:
        assert up.returncode == 0, up.stderr
        bootstrap = up.stdout.strip()
        assert len(bootstrap.split(",")) == int(brokers)
        assert all(addr.startswith("127.0.0.1:") for addr in bootstrap.split(","))

        status = run_harness("cluster", "status", "--dir", str(cluster_dir))
        assert status.returncode == 0, status.stderr
        assert status.stdout.count(" running ") == int(brokers)
        assert status.stdout.count(" live ") == int(brokers)

        with KafkaAdmin(bootstrap) as admin:
            admin.create_topic("t", partitions=2, replication_factor=int(brokers))
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
        for i in range(200):
            producer.send("t", key=str(i % 4).encode(), value=str(i).encode())
        producer.flush()
        producer.close()
        consumer = KafkaConsumer(
            "t", bootstrap_servers=bootstrap, auto_offset_reset="earliest", group_id="g", consumer_timeout_ms=10000
        )
        values = sorted(int(r.value) for r in consumer)
        consumer.close()
        assert values == list(range(200))
    finally:
        down = run_harness("cluster", "down", "--dir", str(cluster_dir))
    assert down.returncode == 0, down.stderr
    assert all(not session_members(r) for r in _broker_pids(cluster_dir))
    status = run_harness("cluster", "status", "--dir", str(cluster_dir))
    assert status.stdout.count(" stopped ") == int(brokers)


def test_down_cleans_up_after_up_was_sigkilled(tmp_path):
    cluster_dir = tmp_path / "cluster"
    up = subprocess.Popen(
        HARNESS + ["cluster", "up", "--brokers", "3", "--dir", str(cluster_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for(
            lambda: len(list((cluster_dir / "pids").glob("*.json"))) == 3 if (cluster_dir / "pids").exists() else False,
            timeout=60,
            what="three broker pid files",
        )
        up.send_signal(signal.SIGKILL)
        up.wait()
        records = _broker_pids(cluster_dir)
        assert all(session_members(r) for r in records), "brokers should outlive the killed `up`"
    finally:
        down = run_harness("cluster", "down", "--dir", str(cluster_dir))
    assert down.returncode == 0, down.stderr
    assert "stopped broker-1, broker-2, broker-3" in down.stdout
    assert all(not session_members(r) for r in records)


@pytest.fixture
def single(tmp_path):
    """A broker of the test's own, for a test that faults it."""
    cluster = EmbeddedCluster.create(tmp_path / "cluster", brokers=1)
    with cluster:
        cluster.start()
        yield cluster


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """One broker for the module's tests that fault nothing: each writes to topics of its own name."""
    cluster = EmbeddedCluster.create(tmp_path_factory.mktemp("shared") / "cluster", brokers=1)
    with cluster:
        cluster.start()
        yield cluster


def test_retention_shrink_moves_log_start_and_old_offsets_are_gone(shared):
    bootstrap = shared.bootstrap_servers
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    with shared.admin() as admin:
        admin.create_topic("r", partitions=1)
        for i in range(100):
            producer.send("r", value=str(i).encode())
        producer.flush()
        admin.alter_topic_config("r", {"retention.ms": "1000", "segment.ms": "200"})
        # the broker applies the controller's config record a moment later: describe may show the old one first
        wait_for(
            lambda: admin.topic_config("r").get("retention.ms") == "1000",
            timeout=15,
            what="the broker to apply retention.ms=1000",
        )
        time.sleep(0.3)  # let the active segment age past segment.ms so the next append rolls it
        producer.send("r", value=b"100").get(timeout=10)
        offsets = wait_for(
            lambda: [o for o in admin.offsets(["r"]) if o.log_start >= 100],
            timeout=30,
            what="retention to delete the first segment",
        )
        assert offsets[0].log_start in (100, 101)  # the segment holding offset 100 may have expired too
        # Restore retention, then write a record that stays. Until the broker applies the restored config, retention
        # may still expire the segment holding offset 100: the log start is read once nothing can move it.
        admin.alter_topic_config("r", {"retention.ms": "600000", "segment.ms": "600000"})
        wait_for(
            lambda: admin.topic_config("r").get("retention.ms") == "600000",
            timeout=15,
            what="the broker to apply retention.ms=600000",
        )
        kept = producer.send("r", value=b"kept").get(timeout=10)
        producer.close()
        log_start = admin.offsets(["r"])[0].log_start
    assert log_start in (100, 101)
    # A consumer asking for offset 0 finds it gone and is reset to the log start.
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False)
    tp = TopicPartition("r", 0)
    consumer.assign([tp])
    consumer.seek(tp, 0)
    batch = consumer.poll(timeout_ms=10000)
    consumer.close()
    assert batch[tp][0].offset == log_start
    assert [r.offset for r in read_topic(bootstrap, "r")] == list(range(log_start, kept.offset + 1))


def test_paused_broker_stops_answering_then_answers_again(single):
    broker = single.brokers[0]
    broker.pause()
    assert broker.state() == "paused"
    with pytest.raises(HarnessError):
        with KafkaAdmin(single.bootstrap_servers, request_timeout_ms=2000, connect_timeout_ms=2000) as admin:
            admin.live_broker_ids()
    broker.resume()
    single.wait_ready(timeout=30)
    assert broker.state() == "running"


@pytest.mark.long  # three brokers; a broker killed under a run: test_faults.py
def test_sigkill_of_one_of_three_brokers_loses_no_acknowledged_record(tmp_path):
    cluster = EmbeddedCluster.create(tmp_path / "cluster", brokers=3)
    with cluster:
        cluster.start()
        with cluster.admin() as admin:
            admin.create_topic("acked", partitions=3, replication_factor=3)
            # The broker asked may not have the new topic's partitions yet: ask until one names a leader.
            first = wait_for(
                lambda: next(
                    (
                        p
                        for t in admin._admin.describe_topics(["acked"])
                        for p in t["partitions"]
                        if p["partition_index"] == 0 and p["leader_id"] >= 0
                    ),
                    None,
                ),
                timeout=30,
                what="a leader of partition 0 of the new topic",
            )
            leader = first["leader_id"]
        acked: list[int] = []
        failed: list[int] = []
        stop = threading.Event()

        def produce():
            producer = KafkaProducer(
                bootstrap_servers=cluster.bootstrap_servers,
                acks="all",
                retries=10,
                request_timeout_ms=10000,
                linger_ms=5,
            )
            n = 0
            while not stop.is_set():

                def on_ok(_, n=n):
                    acked.append(n)

                def on_err(_, n=n):
                    failed.append(n)

                producer.send("acked", key=str(n % 6).encode(), value=str(n).encode()).add_callback(on_ok).add_errback(
                    on_err
                )
                n += 1
                time.sleep(0.002)
            producer.flush(timeout=60)
            producer.close()

        thread = threading.Thread(target=produce)
        thread.start()
        try:
            wait_for(lambda: len(acked) > 500, timeout=60, what="records acknowledged before the kill")
            victim = cluster.broker(leader)
            victim.kill()
            assert not victim.running()
            at_kill = len(acked)
            wait_for(lambda: len(acked) > at_kill + 500, timeout=60, what="records acknowledged with a broker down")
            # What `harness explore` checks before a run on a shared cluster: the broker missing, its replicas
            # out of sync; healthy again once it is back and has caught up.
            access = cluster.client_access()
            sick = wait_for(
                lambda: (p := health_problems(access, 3)) and "2 of 3 brokers live" in p and p,
                timeout=30,
                what="the health check to see the broker gone",
            )
            assert any(line.startswith("acked[") and "under-replicated (2 of 3)" in line for line in sick), sick
            victim.start(wait=True)
            wait_for(lambda: len(acked) > at_kill + 1000, timeout=60, what="records acknowledged after the restart")
            assert wait_healthy(access, 3, timeout_s=60) == []
        finally:
            stop.set()
            thread.join(timeout=90)
        seen = {int(r.value) for r in read_topic(cluster.bootstrap_servers, "acked", timeout=60)}
    missing = sorted(set(acked) - seen)
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {missing[:10]}"
    assert len(acked) > 1500


def test_broker_kill_restart_and_status_api(single):
    broker = single.brokers[0]
    first_pid = broker.pid
    broker.kill()
    assert broker.state() == "stopped" and broker.pid is None
    broker.restart()
    assert broker.state() == "running" and broker.pid != first_pid
    with single.admin() as admin:
        assert admin.live_broker_ids() == {1}
    saved = json.loads((single.workdir / "cluster.json").read_text())
    assert saved["nodes"][0]["port"] == int(single.bootstrap_servers.split(":")[1])


def test_an_admin_with_patience_outlasts_its_only_broker_going_down_and_one_without_does_not(single):
    with single.admin() as admin:
        admin.create_topic("t", partitions=2)
    broker = single.brokers[0]
    with KafkaAdmin(single.bootstrap_servers, request_timeout_ms=2000, connect_timeout_ms=2000, patience_s=90) as admin:
        broker.kill()
        with pytest.raises(HarnessError, match="no Kafka broker reachable"):
            KafkaAdmin(single.bootstrap_servers, request_timeout_ms=2000, connect_timeout_ms=2000)
        back = threading.Timer(3.0, lambda: broker.start(wait=False))
        back.start()
        t0 = time.monotonic()
        offsets = admin.offsets(["t"])  # asked while the broker is down: answered once it is back
        back.join()
    assert [(o.topic, o.partition) for o in offsets] == [("t", 0), ("t", 1)] and time.monotonic() - t0 >= 3


def test_the_generator_sends_exactly_rate_times_duration_records(shared, tmp_path):
    """The workload is what the scenario says: round(rate x duration) records, every one in the ack log
    (before, 200/s over 6 s could send 1,199)."""
    from harness.workload.generator import run
    from harness.workload.generator_settings import WorkloadSettings

    with shared.admin() as admin:
        admin.create_topic("gen", partitions=2)
    for rate, duration in [(200, 6), (150, 7), (180, 7), (37.5, 4)]:
        log = tmp_path / f"acks-{rate}.csv"
        summary = run(
            WorkloadSettings(shared.bootstrap_servers, "gen", str(log), rate=rate, duration_s=duration, keys=3)
        )
        lines = log.read_text().splitlines()[1:]
        assert summary["sent"] == len(lines) == round(rate * duration), (rate, duration)
        assert sum(",acked," in line for line in lines) == summary["acked"] == round(rate * duration)


def test_the_resend_fault_sends_a_seeded_share_again_the_same_record_after_its_delay(shared, tmp_path):
    from harness.workload.generator import run
    from harness.workload.generator_settings import WorkloadSettings

    with shared.admin() as admin:
        admin.create_topic("again", partitions=2)
    log = tmp_path / "acks.csv"
    settings = WorkloadSettings(
        shared.bootstrap_servers, "again", str(log), rate=100, duration_s=4, resend_share=0.1, resend_after_s=1.5
    )
    t0 = time.monotonic()
    summary = run(settings)
    assert time.monotonic() - t0 >= 4 + 1.5 - 0.1  # the last records' copies went out after their delay
    rows = [line.split(",") for line in log.read_text().splitlines()[1:]]
    firsts = [(r[0], int(r[1])) for r in rows if r[-1] == "0"]
    again = [(r[0], int(r[1])) for r in rows if r[-1] == "1"]
    assert summary["sent"] == len(firsts) == len(set(firsts)) == 400 and all(r[4] == "acked" for r in rows)
    assert 15 <= len(again) <= 70 and set(again) <= set(firsts) and len(set(again)) == len(again)
    # the topic holds both copies of each, the same value, the copy at a later offset of the same partition
    held: dict = {}
    for record in read_topic(shared.bootstrap_servers, "again"):
        value = json.loads(record.value)
        held.setdefault((value["key"], value["seq"]), []).append((record.partition, record.offset, record.value))
    assert sorted(held) == sorted(firsts)
    for record in again:
        (p1, o1, v1), (p2, o2, v2) = sorted(held[record])
        assert p1 == p2 and o1 < o2 and v1 == v2
    assert all(len(held[r]) == 1 for r in set(firsts) - set(again))


def test_a_partner_topic_answers_each_record_once_with_its_id_its_missing_and_late_shares_as_declared(shared, tmp_path):
    """Payments answering orders (workload.sources[N].partner), counted from the topics as the broker holds them:
    each payment carries an order's id, no order is answered twice, the declared shares are left without or sent
    late, each when planned, and partners.csv says the same of every order."""
    from harness.workload.generator import run
    from harness.workload.generator_settings import WorkloadSettings
    from harness.workload.template import parse_template

    with shared.admin() as admin:
        admin.create_topic("p-orders", partitions=2)
        admin.create_topic("p-payments", partitions=2)
    orders = parse_template({"identity": {"id": "order_id"}, "fields": {"amount": {"int": [1, 9]}}})
    payments = parse_template({"identity": {"id": "payment_id"}, "fields": {"order_id": "k0000-0"}})
    partner = {"of": "p-orders", "field": "order_id", "id_format": "{key}-{seq}", "after_s": 0.3, "missing": 0.2}
    partner.update(late_share=0.25, late_by_s=1.5)
    source = {"keys": 4, "rate": 100, "codec": "json"}
    sources = [
        {**source, "topic": "p-orders", "record": orders, "prefix": "p-orders:", "partner": None},
        {**source, "topic": "p-payments", "record": payments, "prefix": "p-payments:", "partner": partner},
    ]
    log, answers = tmp_path / "acks.csv", tmp_path / "partners.csv"
    settings = WorkloadSettings(shared.bootstrap_servers, "p-orders", str(log), keys=4, rate=100, duration_s=4)
    t0 = time.monotonic()
    summary = run(replace(settings, record=orders, sources=sources, partner_log=str(answers)))
    assert time.monotonic() - t0 >= 4 + 0.3 + 1.5 - 0.1  # the last late answers went out when planned
    placed = {json.loads(r.value)["order_id"]: r.timestamp for r in read_topic(shared.bootstrap_servers, "p-orders")}
    paid = [
        (json.loads(r.value), r.key.decode(), r.timestamp) for r in read_topic(shared.bootstrap_servers, "p-payments")
    ]
    assert len(placed) == 400 and summary["sent"] == summary["acked"] == 400 + len(paid)
    rows = list(csv.DictReader(answers.open()))
    assert sorted(f"{r['key']}-{r['seq']}" for r in rows) == sorted(placed)  # a line for every order, once
    outcome = {f"{r['key']}-{r['seq']}": r["outcome"] for r in rows}
    answered = Counter(value["order_id"] for value, _, _ in paid)
    assert set(answered) <= set(placed) and set(answered.values()) == {1}
    assert {o for o, v in outcome.items() if v in ("answered", "late")} == set(answered)
    missing = [o for o, v in outcome.items() if v == "missing"]
    late = {o for o, v in outcome.items() if v == "late"}
    assert 40 <= len(missing) <= 120 and 40 <= len(late) <= 130 and "unsent" not in outcome.values()
    for value, key, timestamp in paid:
        order = value["order_id"]
        assert key == "p-payments:" + order.rsplit("-", 1)[0].split(":")[1]  # the order's key number, its own prefix
        waited = (timestamp - placed[order]) / 1000  # never before it was due; a busy machine may send it later
        assert (1.5 + 0.3 - 0.15 <= waited <= 5) if order in late else (0.3 - 0.15 <= waited <= 4), order


def test_a_generator_stopped_while_its_workers_start_exits_cleanly(tmp_path):
    """A SIGTERM to the session before the workers installed their handler kills them by the signal; that is the
    stop asked for, not a failed worker (it made the generator exit 241)."""
    from harness.workload.generator_settings import WorkloadSettings

    settings = tmp_path / "generator.json"
    # no broker needed: stopped before a worker produces anything, nothing waits for a delivery
    WorkloadSettings("127.0.0.1:1", "t", str(tmp_path / "acks"), duration_s=None, workers=2).save(settings)
    argv = [sys.executable, "-m", "harness.workload.generator", str(settings)]
    generator = subprocess.Popen(argv, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    children = f"/proc/{generator.pid}/task/{generator.pid}/children"
    try:
        # its workers started (so its own handler is in place: it is installed first), still importing
        wait_for(lambda: len(open(children).read().split()) == 2, timeout=60, interval=0.01, what="both workers")
        os.killpg(generator.pid, signal.SIGTERM)
        assert generator.wait(60) == 0
    finally:
        if generator.poll() is None:
            os.killpg(generator.pid, signal.SIGKILL)
            generator.wait()
    assert json.loads(generator.stdout.read().splitlines()[-1])["generator"]["acked"] == 0


def test_a_workload_of_two_generator_workers_is_the_planned_records_each_key_counted_by_one(shared, tmp_path):
    """workers: 2 splits the keys (k % 2), the rate and the planned records; each worker logs to its own segments;
    a SIGTERM to the generator's session stops both cleanly, their logs whole."""
    from harness.evidence.acks import AckCounter
    from harness.process import Supervisor
    from harness.workload.generator_settings import WorkloadSettings
    from tests.evidence_helpers import read_acks

    with shared.admin() as admin:
        admin.create_topic("split", partitions=2)
    settings = tmp_path / "generator.json"
    acks = tmp_path / "acks"
    WorkloadSettings(shared.bootstrap_servers, "split", str(acks), rate=400, duration_s=3, keys=5, workers=2).save(
        settings
    )
    argv = [sys.executable, "-m", "harness.workload.generator", str(settings)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(done.stdout.splitlines()[-1])["generator"] == {
        "sent": 1200,
        "acked": 1200,
        "unknown": 0,
        "aborted": 0,
        "workers": 2,
    }
    assert sorted(p.name for p in acks.iterdir()) == ["worker-00", "worker-01"]
    log = read_acks(tmp_path)
    assert len(log) == 1200 and set(log.status) == {"acked"} and AckCounter(acks).poll().acked == 1200
    for key, seqs in log.groupby("key").seq:
        assert sorted(seqs) == list(range(len(seqs))), key  # one worker counted each key
    topic = [json.loads(r.value) for r in read_topic(shared.bootstrap_servers, "split")]
    assert sorted((v["key"], v["seq"]) for v in topic) == sorted(zip(log.key, log.seq))
    # until stopped: a SIGTERM to the session (as the runner stops it) ends both workers, nothing left running
    until = tmp_path / "until"
    WorkloadSettings(shared.bootstrap_servers, "split", str(until / "acks"), duration_s=None, workers=2).save(settings)
    with Supervisor(tmp_path / "pids") as supervisor:
        generator = supervisor.start("generator", argv, tmp_path / "generator.log")
        counter = AckCounter(until / "acks")
        folders = [until / "acks" / f"worker-0{w}" for w in (0, 1)]
        wait_for(
            lambda: counter.poll().acked >= 200 and all(f.is_dir() and any(f.iterdir()) for f in folders),
            timeout=60,
            what="both workers to send",
        )
        generator.signal(signal.SIGTERM)
        wait_for(lambda: not generator.running(), timeout=30, what="the generator and its workers to stop")
        assert generator.wait_exit() == 0 and not session_members(generator.record)
    log = read_acks(until)
    assert sorted(p.name for p in (until / "acks").iterdir()) == ["worker-00", "worker-01"]
    assert set(log.status) == {"acked"} and counter.poll().acked == len(log) >= 200
