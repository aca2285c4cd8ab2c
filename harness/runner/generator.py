"""The run's generator: the workload's process, started with what the run's whole-run faults asked of it (late
events, resent records), stopped early when the run ends first, and its exit recorded once."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from harness.errors import HarnessError
from harness.evidence.history import PROCESS_EXITED, PROCESS_STARTED, WORKLOAD_STOPPED
from harness.evidence.recording_forms import COLUMNAR
from harness.faults.kind import GENERATOR
from harness.process import ManagedProcess
from harness.runner.kafka_service import KafkaService
from harness.runner.shared import RunShared
from harness.runner.topology import Topology
from harness.scenario.applications import declared_filters, judged_fields
from harness.scenario.parse import SourceSpec
from harness.waiting import wait_for
from harness.workload.generator_settings import WorkloadSettings


class Generator:
    """The workload of one run, as a process."""

    def __init__(self, shared: RunShared, topology: Topology, kafka: KafkaService):
        self.shared = shared
        self.topology = topology
        self.kafka = kafka
        self.proc: ManagedProcess | None = None
        self.late_events: dict = {}  # late-events: the generator's share, late_by_s, after_s
        self.resend: dict = {}  # resend: the generator's share and after_s
        self._exit_recorded = False
        self._stopped = False

    @property
    def ack_log(self) -> Path:
        """Where the generator (and the canaries) log what was sent: acks.csv, or its segments for a run recording
        its evidence in columnar form or a workload of several generator workers (a folder of segments each)."""
        columnar = self.shared.scenario.recordings == COLUMNAR or self.shared.scenario.workload.workers > 1
        return self.shared.layout.ack_segments if columnar else self.shared.layout.ack_log

    def start(self, duration_s: float | None, seed: int | None = None) -> None:
        """Start producing: for `duration_s`, or until stop() when None."""
        w = self.shared.scenario.workload
        kafka = self.kafka.kafka
        settings = WorkloadSettings(
            bootstrap_servers=self.kafka.client_access(GENERATOR).bootstrap_servers,
            kafka_security=kafka.security,
            topic=self.topology.topic_name(w.topic),
            ack_log=str(self.ack_log),
            keys=w.keys,
            rate=w.drawn_rate,
            duration_s=duration_s,
            payload_bytes=w.payload_bytes,
            seed=w.seed if seed is None else seed,
            late_share=self.late_events.get("share", 0.0),
            late_by_s=self.late_events.get("late_by_s", 0.0),
            late_after=int(self.late_events.get("after_s", 0.0) * w.drawn_rate),
            resend_share=self.resend.get("share", 0.0),
            resend_after_s=self.resend.get("after_s", 0.0),
            idempotence=w.idempotence,
            acks=w.acks,
            codec=w.topic.codec,
            headers=w.headers,
            transaction_records=w.transaction_records,
            abort_every=w.abort_every,
            record=w.record,
            keeps=declared_filters(self.shared.scenario.blueprint),
            dropped_dir=str(self.shared.layout.dropped(GENERATOR).parent),
            workers=w.workers,
            sources=self.fed_sources(),
            partner_log=str(self.shared.layout.partners),
            value_fields=judged_fields(self.shared.scenario.blueprint),
            value_log=str(self.shared.layout.values),
        )
        settings.save(self.shared.layout.generator_settings)
        self.proc = self.shared.supervisor.start(
            "generator",
            [sys.executable, "-m", "harness.workload.generator", str(self.shared.layout.generator_settings)],
            self.shared.layout.log("generator"),
            # this process's environment (a container's LD_LIBRARY_PATH, the locale, HOME) and the password
            env={**os.environ, **kafka.child_env()},
        )
        self.shared.history.record(PROCESS_STARTED, process="generator", pid=self.proc.pid, role="generator")

    def fed_sources(self) -> list[dict]:
        """A workload of several source topics: each one's settings (WorkloadSettings.sources); of one: none."""
        prefixes = self.topology.source_keys()
        return [
            {
                "topic": topic,
                "keys": source.keys,
                "rate": source.rate,
                "record": source.record,
                "codec": source.topic.codec,
                "prefix": prefixes[topic],
                "partner": self._partner(source),
            }
            for source in self.shared.scenario.workload.fed
            if (topic := self.topology.topic_name(source.topic)) in prefixes
        ]

    def _partner(self, source: SourceSpec) -> dict | None:
        """A partner topic's settings: the topic it answers by its real name, and that topic's records' ids."""
        if source.partner is None:
            return None
        (answered,) = [s for s in self.shared.scenario.workload.fed if s.topic.name == source.partner.of]
        return source.partner.settings(self.topology.topic_name(answered.topic), answered.record)

    def stop(self, reason: str) -> None:
        """End a workload that has no end of its own: SIGTERM, after which the generator waits for the outcome
        of what it sent and exits (done() says when). Once; later calls do nothing."""
        if self.proc is None or self._stopped:
            return
        self._stopped = True
        self.shared.history.record(WORKLOAD_STOPPED, pid=self.proc.pid, reason=reason)
        self.proc.signal(signal.SIGTERM)

    def wait(self, timeout: float = 120.0) -> None:
        """Until the generator has exited (its workload over, or stopped early), its exit recorded, whatever its
        exit code: nothing more is sent while the pipeline drains."""
        if self.proc is not None:
            wait_for(lambda: not self.proc.running(), timeout=timeout, interval=0.5, what="the generator to exit")
            try:
                self.done()
            except HarnessError:
                pass  # a failed generator: recorded (process_exited, its exit code), its acknowledgements are evidence

    def done(self) -> bool:
        """True once the generator has exited (recorded once); a failed generator stops the run."""
        if self.proc is None or self.proc.running():
            return False
        code = self.proc.wait_exit()
        if not self._exit_recorded:
            self._exit_recorded = True
            self.shared.history.record(PROCESS_EXITED, process="generator", pid=self.proc.pid, exit_code=code)
        if code != 0:
            raise HarnessError(f"the generator failed with exit code {code} (see {self.proc.record.log_path})")
        return True
