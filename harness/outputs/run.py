"""What an output kind uses of a run: the narrow interface PipelineRun meets, so that the kinds depend on it and
never on the runner that imports them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from harness.evidence.history import History
    from harness.evidence.layout import RunLayout
    from pipelines.settings import DriverPaths


class OutputRun(Protocol):
    """What an output kind uses of the run."""

    layout: RunLayout
    history: History
    run_id: str
    store_url: str | None  # the scenario's PostgreSQL store, password included (it never leaves the process)
    recordings: str  # how the run records topics (harness/evidence/topics.py)

    def driver_paths(self, name: str) -> DriverPaths: ...

    def output_topic(self, name: str) -> str: ...  # the real name of the topic Kafka output `name` reads
