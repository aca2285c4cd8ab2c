"""The network proxy in front of a real broker: a link's clients stay on it, and each fault does to the link
what it says, measured in the test against the same link healthy."""

from __future__ import annotations

import socket
import statistics
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from harness.cluster import EmbeddedCluster, KafkaAdmin
from harness.network import NetworkLinks
from harness.process import Supervisor

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def linked(tmp_path_factory):
    """One broker with a link `app` through the proxy, and a topic holding 2 MB."""
    root = tmp_path_factory.mktemp("network")
    cluster = EmbeddedCluster.create(root / "cluster", brokers=1, links=["app"])
    supervisor = Supervisor(root / "pids")
    try:
        cluster.start()
        links = NetworkLinks(supervisor, root / "control", root / "proxy.log", cluster.link_routes()).start()
        with KafkaAdmin(cluster.bootstrap_servers) as admin:
            admin.create_topic("bulk", 1, 1, {})
            admin.create_topic("pings", 1, 1, {})
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 5})
        for _ in range(2000):
            producer.produce("bulk", b"x" * 1000)
        producer.flush(30)
        yield cluster, links, links.bootstrap("app")
    finally:
        supervisor.close(timeout=10)
        cluster.close()
    assert not supervisor.processes() or not any(p.running() for p in supervisor.processes())


def _round_trips(bootstrap: str, n: int = 8) -> list[float]:
    """Seconds from produce to its acknowledgement, one record at a time, on a fresh producer."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    producer.produce("pings", b"warm-up")
    producer.flush(30)
    times = []
    for _ in range(n):
        start = time.monotonic()
        producer.produce("pings", b"ping")
        assert producer.flush(30) == 0
        times.append(time.monotonic() - start)
    return times


def _read_all(bootstrap: str, topic: str = "bulk", records: int = 2000) -> float:
    """Seconds to read `records` of `topic` from the start."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g{time.monotonic_ns()}",
            "enable.auto.commit": False,
            "fetch.max.bytes": 1 << 20,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    start, seen = time.monotonic(), 0
    try:
        while seen < records and time.monotonic() - start < 60:
            seen += len([m for m in consumer.consume(500, timeout=0.5) if not m.error()])
    finally:
        consumer.close()
    assert seen >= records
    return time.monotonic() - start


def test_metadata_keeps_a_links_clients_on_its_proxy(linked):
    cluster, links, bootstrap = linked
    proxy_port = cluster.brokers[0].spec.links["app"][2]
    assert bootstrap == f"127.0.0.1:{proxy_port}"
    producer = Producer({"bootstrap.servers": bootstrap})
    advertised = {b.port for b in producer.list_topics(timeout=10).brokers.values()}
    assert advertised == {proxy_port}, "the broker must advertise the proxy to clients of the link"


def test_delay_slows_each_round_trip_and_healing_restores_it(linked):
    _, links, bootstrap = linked
    healthy = _round_trips(bootstrap)
    links.impair("app", delay_ms=150)
    try:
        delayed = _round_trips(bootstrap)
    finally:
        links.heal("app")
    again = _round_trips(bootstrap)
    print(
        "produce round trip (fastest, median): "
        + ", ".join(
            f"{name} {min(trips) * 1000:.1f}, {statistics.median(trips) * 1000:.1f} ms"
            for name, trips in (("healthy", healthy), ("delayed", delayed), ("healed", again))
        )
    )
    # The fastest round trips: a loaded machine only makes a round trip slower, never faster than its delay.
    assert min(delayed) >= 0.28, "a request and its answer are each delayed 150 ms"
    assert min(again) < min(healthy) + 0.1 < min(delayed)


def test_bandwidth_holds_a_read_to_the_rate(linked):
    _, links, bootstrap = linked
    healthy = _read_all(bootstrap)
    links.impair("app", bytes_per_s=500_000)
    try:
        limited = _read_all(bootstrap)
    finally:
        links.heal("app")
    print(f"reading 2 MB: healthy {healthy:.2f} s, at 500 kB/s {limited:.2f} s")
    assert limited >= 3.0 > healthy, "2 MB at 500 kB/s takes about 4 s"


def test_a_partition_hangs_the_link_and_healing_lets_it_through(linked):
    _, links, bootstrap = linked
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    producer.produce("pings", b"before")
    assert producer.flush(30) == 0
    links.impair("app", partition=True)
    try:
        producer.produce("pings", b"during")
        assert producer.flush(3) == 1, "nothing goes through a cut link"
    finally:
        links.heal("app")
    assert producer.flush(30) == 0, "the record sent during the cut is delivered once the link heals"


def test_reset_sends_a_rst_to_open_connections(linked):
    cluster, links, _ = linked
    proxy_port = cluster.brokers[0].spec.links["app"][2]
    with socket.create_connection(("127.0.0.1", proxy_port), timeout=5) as conn:
        time.sleep(0.3)  # the proxy has connected it upstream
        links.impair("app", reset=True)
        links.heal("app")
        with pytest.raises(ConnectionResetError):
            conn.settimeout(5)
            conn.sendall(b"\0" * 16)
            conn.recv(16)
