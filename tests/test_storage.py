"""A node's storage formatted from the kept bootstrap checkpoint is what Kafka's StorageTool writes (the brokers
started on it are every real run's: tests/test_cluster.py and the runs)."""

from __future__ import annotations

from harness import jars
from harness.cluster import storage
from harness.cluster.config import NodeSpec, broker_properties, new_kafka_uuid, render_properties
from harness.cluster.embedded import BROKER_ROLE


def _properties(path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if line and not line.startswith("#"))


def test_a_node_formatted_here_has_the_files_and_fields_storage_tool_writes(tmp_path):
    cluster_id = new_kafka_uuid()
    spec = NodeSpec(2, 19092, 19093)
    nodes = {}
    for name in ("tool", "here"):
        config = tmp_path / name / "server.properties"
        config.parent.mkdir()
        config.write_text(render_properties(broker_properties(spec, [spec], tmp_path / name / "data", None, None)))
        nodes[name] = (2, config, tmp_path / name / "data")
    storage._run_storage_tool(cluster_id, [nodes["tool"][1]], jars.kafka_classpath(), BROKER_ROLE, {})
    storage.format_nodes(cluster_id, [nodes["here"]], BROKER_ROLE, jars.kafka_classpath(), {})

    tool, here = tmp_path / "tool" / "data", tmp_path / "here" / "data"
    assert (
        sorted(p.name for p in here.iterdir())
        == sorted(p.name for p in tool.iterdir())
        == [
            storage.BOOTSTRAP,
            storage.META,
        ]
    )
    theirs, ours = _properties(tool / storage.META), _properties(here / storage.META)
    assert set(ours) == set(theirs) and ours["directory.id"] != theirs["directory.id"]
    assert {k: v for k, v in ours.items() if k != "directory.id"} == {
        k: v for k, v in theirs.items() if k != "directory.id"
    }
    assert ours["node.id"] == "2" and ours["cluster.id"] == cluster_id and len(ours["directory.id"]) == 22
    # the same feature records, written at another time: the same length
    assert len((here / storage.BOOTSTRAP).read_bytes()) == len((tool / storage.BOOTSTRAP).read_bytes())
