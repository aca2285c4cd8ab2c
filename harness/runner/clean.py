"""`harness clean RUN_DIR`: after a harness that was killed, stop what its run left running and undo what its
faults left undone, from the run directory alone.

Whatever is frozen is thawed first (a paused broker, a driver frozen for an in-flight kill), then every
process the pid files name is stopped (pid and start time checked), and the harness's broker containers are
removed by label. The broker containers of a cluster one runs (named in the history) are left running, as the
run found them: unpaused, started again. What a fault left undone on a cluster one runs (a topic's retention)
is named, for a person to undo. What the run's killed drivers left in a team's job folder is moved into the run.
The evidence stays.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

from harness.cluster import EmbeddedCluster
from harness.docker.cluster import ContainerCluster, remove_containers
from harness.errors import HarnessError
from harness.evidence.history import CLUSTER, FAULT_UNDO_FAILED, FAULT_UNDONE
from harness.evidence.layout import RunLayout
from harness.process import stop_all_recorded
from harness.process.supervisor import ManagedProcess, live_recorded
from harness.runner.job_folders import JobFolders
from harness.world.mountpoints import MountPoints


def clean_run(run_dir: Path) -> list[str]:
    """What was done, one line each (empty: nothing was left)."""
    layout = RunLayout(Path(run_dir))
    if layout.root.is_file():
        raise HarnessError(f"{run_dir}: a file, not a run directory (give the folder a run wrote its evidence in)")
    if not layout.root.is_dir():
        raise HarnessError(f"{run_dir}: no such run directory")
    pid_dirs = [layout.pids, layout.cluster / "pids"]
    for record in live_recorded(pid_dirs):  # a frozen process cannot stop by itself
        ManagedProcess(record).signal(signal.SIGCONT)
    stopped = [f"{r.name} (pid {r.pid})" for pid_dir in pid_dirs for r in stop_all_recorded(pid_dir)]
    if (layout.cluster / "cluster.json").is_file() and EmbeddedCluster.runtime_of(
        layout.cluster
    ) == ContainerCluster.runtime:
        stopped += [f"container {name}" for name in remove_containers(layout.cluster)]
    lines = [f"stopped {', '.join(stopped)}"] if stopped else []
    moved = JobFolders(layout).tidy()  # what killed drivers left in a team's job folder
    lines += [f"moved {len(moved)} folder(s) Spark left in a job's folder into {layout.root / 'work'}"] if moved else []
    removed = MountPoints(layout.mount_points).release()  # what a killed run made for its jobs' worlds
    lines += [f"removed {len(removed)} mount point(s) made for a job's world: {', '.join(removed)}"] if removed else []
    history = _history(layout.history)
    lines += _foreign_brokers_running(history)
    external = any(e["event"] == CLUSTER and e.get("kind") == "external" for e in history)
    if external:
        lines += [
            f"still to undo by hand on {e.get('bootstrap_servers', 'the cluster')}: {e['what']}"
            for e in _undos_left(history)
        ]
    return lines


def _history(path: Path) -> list[dict]:
    events = []
    if path.is_file():
        for line in path.read_text().splitlines():
            try:
                events.append(json.loads(line))
            except ValueError:  # a line cut by the kill
                continue
    return events


def _undos_left(history: list[dict]) -> list[dict]:
    """Undos that failed and never worked since, with where the cluster is."""
    undone = {e.get("undo") for e in history if e["event"] == FAULT_UNDONE}
    servers = next((e.get("bootstrap_servers") for e in history if e["event"] == CLUSTER), None)
    left = {e.get("undo"): e for e in history if e["event"] == FAULT_UNDO_FAILED and e.get("undo") not in undone}
    return [{**e, "bootstrap_servers": servers} for e in left.values()]


def _foreign_brokers_running(history: list[dict]) -> list[str]:
    """The broker containers of a cluster one runs, as the run found them: running."""
    names = next(
        (e.get("containers") or [] for e in history if e["event"] == CLUSTER and e.get("kind") == "external"), []
    )
    if not names:
        return []
    from harness.docker import engine

    client = engine.client()
    done = []
    for name in names:
        container = client.containers.get(name)
        if container.status == "paused":
            container.unpause()
            done.append(f"unpaused container {name}")
        elif container.status != "running":
            container.start()
            done.append(f"started container {name}")
    return done
