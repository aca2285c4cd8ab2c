"""docker-compose.yml cannot run here (no Docker engine); check it says what the README says."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def test_compose_services_and_ports_match_the_readme():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    readme = (ROOT / "README.md").read_text()
    brokers = {name: svc for name, svc in services.items() if svc.get("image", "").startswith("apache/kafka")}
    assert set(brokers) == {"kafka-1", "kafka-3a", "kafka-3b", "kafka-3c"}
    for name, svc in brokers.items():
        env = svc["environment"]
        assert "broker" in env["KAFKA_PROCESS_ROLES"] and "controller" in env["KAFKA_PROCESS_ROLES"]
        (published,) = svc["ports"]
        host_port = published.split(":")[0]
        assert f"localhost:{host_port}" in env["KAFKA_ADVERTISED_LISTENERS"]
        assert f"localhost:{host_port}" in readme, f"README should name {name}'s port {host_port}"
        assert env["KAFKA_AUTO_CREATE_TOPICS_ENABLE"] == "false"
    three = [services[n]["environment"] for n in ("kafka-3a", "kafka-3b", "kafka-3c")]
    assert all(e["KAFKA_MIN_INSYNC_REPLICAS"] == 2 and e["KAFKA_DEFAULT_REPLICATION_FACTOR"] == 3 for e in three)
    assert len({e["KAFKA_NODE_ID"] for e in three}) == 3
    assert "harness demo --bootstrap-servers kafka-1:9092" in services["harness"]["command"][-1]
    assert "not exercised" in readme
