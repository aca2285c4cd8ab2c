"""The run's schema registry: started, before the jobs, where the workload's template asks for one (`registry:
true`), serving its schema under the template's id for the source topic's subject (harness/workload/registry.py)."""

from __future__ import annotations

import json
import sys
import urllib.request

from harness.errors import HarnessError
from harness.evidence.history import PROCESS_STARTED
from harness.process import ManagedProcess
from harness.process.ports import free_ports
from harness.runner.shared import RunShared
from harness.runner.topology import Topology
from harness.waiting import wait_for
from harness.workload.registry import PROBE, Registered, RegistrySettings

START_PATIENCE_S = 30.0  # measured: the server answers within a second of its start


def subject(topic: str) -> str:
    """The subject a topic's values are registered under (the registry's default, TopicNameStrategy)."""
    return f"{topic}-value"


class Registry:
    def __init__(self, shared: RunShared, topology: Topology):
        self.shared, self.topology = shared, topology
        self.proc: ManagedProcess | None = None
        self.port: int | None = None

    @property
    def wanted(self) -> bool:
        record = self.shared.scenario.workload.record
        return bool(record and record.get("registry"))

    @property
    def address(self) -> str:
        if self.port is None:
            raise HarnessError("the run has no schema registry (workload.record.registry: true starts one)")
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.address}"

    def start(self) -> None:
        """Serve the template's schema, if it asks for a registry; once it answers."""
        if not self.wanted:
            return
        w, layout = self.shared.scenario.workload, self.shared.layout
        topic = self.topology.topic_name(w.topic)
        schema = Registered(subject(topic), 1, w.record["schema_id"], json.dumps(w.record["avro"]))
        self.port = free_ports(1)[0]
        RegistrySettings(self.port, str(layout.registry_requests), (schema,)).save(layout.registry_settings)
        argv = [sys.executable, "-m", "harness.workload.registry", str(layout.registry_settings)]
        self.proc = self.shared.supervisor.start("registry", argv, layout.log("registry"))
        self.shared.history.record(PROCESS_STARTED, process="registry", pid=self.proc.pid, role="registry")
        wait_for(self._answers, timeout=START_PATIENCE_S, interval=0.2, what="the schema registry to answer")

    def _answers(self) -> bool:
        if not self.proc.running():
            raise HarnessError(f"the schema registry exited at its start (see {self.proc.record.log_path})")
        try:
            probe = urllib.request.Request(f"{self.url}/subjects", headers={PROBE: "1"})
            with urllib.request.urlopen(probe, timeout=2) as reply:
                return reply.status == 200
        except OSError:
            return False
