"""What the output kinds and the applications use of a run: narrow interfaces that PipelineRun meets, so that they
depend on these, not on the run that imports them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from harness.cluster.access import KafkaAccess
    from harness.evidence.checkpoint import CheckpointFollower
    from harness.evidence.history import History
    from harness.evidence.layout import RunLayout
    from harness.evidence.progress import ProgressFollower
    from harness.process import Supervisor
    from harness.scenario import Scenario
    from harness.scenario.blueprint import TopicSpec
    from harness.spark.versions import SparkRuntime
    from pipelines.settings import DriverPaths, SourceOptions


class OutputRun(Protocol):
    """What an output kind (table_outputs.py, file_outputs.py) uses of the run."""

    scenario: Scenario
    layout: RunLayout
    history: History
    run_id: str

    def driver_paths(self, name: str) -> DriverPaths: ...


class ApplicationRun(OutputRun, Protocol):
    """What starting and checking a team's application (applications.py) uses of the run."""

    supervisor: Supervisor
    progress: dict[str, ProgressFollower | CheckpointFollower]
    source_overrides: dict[str, SourceOptions]

    def driver_env(self) -> dict[str, str]: ...

    def prepare_spark(self) -> SparkRuntime: ...

    def spark_master(self) -> str | None: ...

    def app_name(self, name: str) -> str: ...

    def client_access(self, name: str) -> KafkaAccess: ...

    def source_options(self, name: str) -> SourceOptions: ...

    def topic_name(self, spec: TopicSpec) -> str: ...

    def all_topics(self) -> list[TopicSpec]: ...
