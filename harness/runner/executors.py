"""Watches the executors of the run's applications on the Spark standalone cluster, into the history.

Each second: which executor of which streamlet's application runs on which worker (in which JVM). An executor
that appears is `executor_added`, one that is gone (killed, lost with its worker, replaced) is
`executor_removed`: Spark's recovery after an executor-kill or a worker-kill, as it happened.
"""

from __future__ import annotations

from harness.evidence.history import EXECUTOR_ADDED, EXECUTOR_REMOVED, SPARK_APPLICATION, History
from harness.runner.periodic import PeriodicSampler
from harness.spark.standalone import StandaloneCluster, executor_tag


class ExecutorWatch(PeriodicSampler):
    def __init__(self, cluster: StandaloneCluster, apps: dict[str, str], history: History, interval_s: float = 1.0):
        """`apps`: application name -> streamlet."""
        super().__init__("executor-watch", interval_s)
        self.cluster, self.apps, self.history = cluster, apps, history
        self._ids: dict[str, str] = {}  # application id -> streamlet
        self._running: dict[tuple[str, str], dict] = {}  # (application id, executor id) -> what was recorded

    def sample(self) -> None:
        status = self.cluster.status()
        if status is None:
            return
        executors = self.cluster.executors()
        # a team's job names itself: its executors carry the harness's name for it (APPLICATION_TAG)
        tagged = {e.app_id: self.apps.get(executor_tag(e.pid) or "") for e in executors if e.pid is not None}
        for app in status.get("activeapps", []):
            streamlet = self.apps.get(app.get("name")) or tagged.get(app["id"])
            if streamlet is not None and app["id"] not in self._ids:
                self._ids[app["id"]] = streamlet
                self.history.record(SPARK_APPLICATION, streamlet=streamlet, app_id=app["id"])
        now = {}
        for e in executors:
            if e.app_id in self._ids and e.pid is not None:  # its JVM runs
                now[(e.app_id, e.executor_id)] = {
                    "streamlet": self._ids[e.app_id],
                    "app_id": e.app_id,
                    "executor": e.executor_id,
                    "worker": e.worker,
                    "pid": e.pid,
                }
        for key in now.keys() - self._running.keys():
            self.history.record(EXECUTOR_ADDED, **now[key])
        for key in self._running.keys() - now.keys():
            self.history.record(EXECUTOR_REMOVED, **self._running[key])
        self._running = now
