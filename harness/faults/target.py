"""What a fault may touch of a running pipeline: the narrow interface fault kinds use.

The runner's PipelineRun provides it; the fault kinds and the chaos driver depend on this Protocol only, so
they never import the runner (which imports the chaos driver to play a schedule) nor the scenario parser
(which imports the fault kinds to check a scenario).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # names for the annotations only: reading a scenario (which finds the fault kinds) starts nothing
    from harness.cluster import EmbeddedCluster, KafkaAdmin
    from harness.cluster.access import KafkaAccess
    from harness.codecs import Decode
    from harness.evidence.history import History
    from harness.evidence.layout import RunLayout
    from harness.faults.undo import Undos
    from harness.network import NetworkLinks
    from harness.process import ManagedProcess
    from harness.spark.standalone import StandaloneCluster
    from harness.waiting import Patience
    from pipelines.settings import SourceOptions


class Pipeline(Protocol):
    layout: RunLayout
    history: History
    undos: Undos  # every fault's undo goes through it: retried at the drain when it failed
    kafka: KafkaAccess  # where the brokers are and how to speak to them
    cluster: EmbeddedCluster | None  # None on a cluster the harness did not create
    network: NetworkLinks | None  # the proxied links, when a scenario's faults target any
    spark_cluster: StandaloneCluster | None  # the Spark standalone cluster the harness started, if any
    drivers: dict[str, ManagedProcess]  # streamlet -> its driver process
    failed: dict[str, str]  # streamlet -> why its driver ended by itself
    under_fault: set[str]  # targets a fault is playing on: their drivers stop on purpose
    source_overrides: dict[str, SourceOptions]  # a redeploy's new source options, used by later restarts
    setting_overrides: dict[str, dict]  # streamlet -> settings a whole-run fault gives its driver (before it starts)
    late_events: dict  # late-events' share, late_by_s and after_s for the generator (before it starts; empty: none)
    resend: dict  # resend's share and after_s for the generator (before it starts; empty: none)
    restart_patience: Patience  # how long a driver's (re)start is given, scaled by what the first start took

    def admin(
        self, patience_s: float = ...
    ) -> KafkaAdmin: ...  # on a cluster one runs, it refuses to change topics outside the run's

    def broker(self, target: str): ...  # broker-N: a broker process or container (harness.cluster, harness.docker)

    def start_driver(self, name: str) -> ManagedProcess: ...

    def set_aside_driver(self, name: str) -> ManagedProcess: ...  # its driver, tracked apart: another may start

    def has_crash_point(self, name: str) -> bool: ...  # its driver holds a batch at an armed crash point (not a job's)

    def real_time(self, name: str) -> bool: ...  # an application whose query runs in Real-time Mode

    def wait_up(self, name: str, timeout: float | None = None) -> bool: ...

    def next_run(self, name: str) -> ManagedProcess | None: ...  # a job run on a schedule: its next run, once begun

    def exited_drivers(self) -> list[str]: ...

    def source_options(self, name: str) -> SourceOptions: ...

    def app_name(self, name: str) -> str: ...

    def input_topics(self, name: str) -> list[str]: ...

    def output_topics(self, name: str) -> list[str]: ...

    def output_probes(self, name: str) -> list: ...  # probes of the tables and files an application writes (latest_ms)

    def value_decoders(self) -> dict[str, Decode]: ...

    def committed_offsets(self, name: str) -> dict[tuple[str, int], int]: ...

    def wait_recorded(self, timeout: float = 120.0) -> None: ...

    def record_new_partitions(self, topic: str) -> None: ...

    def generator_done(self) -> bool: ...
