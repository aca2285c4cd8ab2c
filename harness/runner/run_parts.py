"""What the applications use of a run: a narrow interface that PipelineRun meets, so that they depend on it, not on
the run that imports them (the output kinds' is harness/outputs/run.py)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from harness.outputs.run import OutputRun

if TYPE_CHECKING:
    from harness.cluster.access import KafkaAccess
    from harness.evidence.checkpoint import CheckpointFollower
    from harness.evidence.progress import ProgressFollower
    from harness.outputs import Sink
    from harness.process import Supervisor
    from harness.runner.job_folders import JobFolders
    from harness.runner.registry import Registry
    from harness.scenario import Scenario
    from harness.scenario.blueprint import TopicSpec
    from harness.spark.versions import SparkRuntime
    from harness.world.mountpoints import MountPoints
    from pipelines.settings import SourceOptions


class ApplicationRun(OutputRun, Protocol):
    """What starting and checking a team's application (applications.py) uses of the run."""

    scenario: Scenario
    sinks: dict[str, Sink]  # its outputs' (their placeholders)
    supervisor: Supervisor
    progress: dict[str, ProgressFollower | CheckpointFollower]
    source_overrides: dict[str, SourceOptions]
    job_folders: JobFolders  # what Spark leaves in a job's folder, noted before its first start
    mount_points: MountPoints  # where the jobs' worlds mount over paths the machine does not have
    registry: Registry  # the schema registry the jobs look their schemas up in, where the template asks for one

    def driver_env(self) -> dict[str, str]: ...

    def prepare_spark(self) -> SparkRuntime: ...

    def job_requirements(self, name: str) -> Path | None: ...  # where its own requirements are installed

    def spark_master(self) -> str | None: ...

    def app_name(self, name: str) -> str: ...

    def client_access(self, name: str) -> KafkaAccess: ...

    def source_options(self, name: str) -> SourceOptions: ...

    def topic_name(self, spec: TopicSpec) -> str: ...

    def all_topics(self) -> list[TopicSpec]: ...
