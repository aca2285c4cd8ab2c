"""A KRaft node's storage, formatted as Kafka's StorageTool formats it without a JVM for each node.

StorageTool writes two files into a node's log directory: meta.properties (the node's id, the cluster's id and an
id of the directory's own) and bootstrap.checkpoint (the feature levels a new cluster of this Kafka version starts
with: the same for every node and cluster, but for the time it was written). The tool formats the nodes of the
first cluster of a Kafka classpath; its bootstrap.checkpoint is kept in the jars' cache, and every later node gets
a copy and a meta.properties written here. (Kafka 4.4 writes no such file, and the tool formats each of its
clusters.) The tool's JVM took 1.1-1.4 CPU seconds and 0.7 s per node, in every
run and before each run's broker could start (docs/performance.md).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
from pathlib import Path

from harness import cds, jars
from harness.cluster.config import new_kafka_uuid
from harness.errors import HarnessError

BOOTSTRAP = "bootstrap.checkpoint"
META = "meta.properties"


def format_nodes(
    cluster_id: str, nodes: list[tuple[int, Path, Path]], role: str, classpath: str, features: dict[str, int]
) -> None:
    """Format each (node id, server.properties, log directory) of a new cluster with `features` (name -> level):
    from the kept bootstrap checkpoint when there is one for this Kafka classpath and features, else with
    StorageTool (JVMs of `role`'s class-data archive), whose checkpoint is then kept."""
    kept = _kept_checkpoint(classpath, features)
    if kept.is_file():
        checkpoint = kept.read_bytes()  # once for every node
        for node_id, _, log_dir in nodes:
            log_dir.mkdir(parents=True, exist_ok=True)
            (log_dir / BOOTSTRAP).write_bytes(checkpoint)
            (log_dir / META).write_text(meta_properties(node_id, cluster_id))
        return
    _run_storage_tool(cluster_id, [config for _, config, _ in nodes], classpath, role, features)
    if not (nodes[0][2] / BOOTSTRAP).is_file():
        return  # Kafka 4.4 writes its bootstrap records into the metadata log's first snapshot: formatted every time
    kept.parent.mkdir(parents=True, exist_ok=True)
    staging = kept.with_name(f".{kept.name}.{os.getpid()}")
    staging.write_bytes((nodes[0][2] / BOOTSTRAP).read_bytes())
    staging.replace(kept)  # atomic: another process formatting at the same time keeps one whole file


def meta_properties(node_id: int, cluster_id: str) -> str:
    """A node's meta.properties as StorageTool writes it (version 1: KRaft), with a directory id of its own."""
    stamp = time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime())
    return f"#\n#{stamp}\nnode.id={node_id}\ndirectory.id={new_kafka_uuid()}\nversion=1\ncluster.id={cluster_id}\n"


def _kept_checkpoint(classpath: str, features: dict[str, int]) -> Path:
    key = hashlib.sha256(f"{classpath}|{sorted(features.items())}".encode() if features else classpath.encode())
    return jars.jars_dir() / "kafka-storage" / f"{key.hexdigest()[:16]}.{BOOTSTRAP}"


def _run_storage_tool(
    cluster_id: str, configs: list[Path], classpath: str, role: str, features: dict[str, int]
) -> None:
    """Kafka's StorageTool on every node's server.properties, in parallel (one JVM each)."""
    java = jars.java_executable()
    runs = [
        subprocess.Popen(
            [java, *cds.java_options(role, classpath), "-Xmx256m", "-cp", classpath, "kafka.tools.StorageTool"]
            + ["format", "--config", str(config), "--cluster-id", cluster_id]
            + [arg for name, level in sorted(features.items()) for arg in ("--feature", f"{name}={level}")],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for config in configs
    ]
    for config, run in zip(configs, runs):
        try:
            output, _ = run.communicate(timeout=600)  # against a hang: seconds, a minute on a busy machine
        except subprocess.TimeoutExpired:
            for other in runs:
                other.kill()
                other.wait()
            raise HarnessError(f"formatting storage of {config.parent.name} did not end within 600 s") from None
        if run.returncode != 0:
            last = (output.strip().splitlines() or ["(no output)"])[-1]
            raise HarnessError(f"formatting storage of {config.parent.name} failed: {last}")
