"""What every service of a run is given (harness/runner/pipeline_run.py composes them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from harness.evidence.history import History
from harness.evidence.layout import RunLayout
from harness.process import Supervisor
from harness.scenario import Scenario


@dataclass(frozen=True)
class RunShared:
    """The scenario, the run directory, its history, the supervisor of the processes it starts, and where its notes
    to the user go."""

    scenario: Scenario
    layout: RunLayout
    history: History
    supervisor: Supervisor
    say: Callable[[str], None]

    @property
    def run_id(self) -> str:
        """The run's id: its directory's name (a cluster's applications and topics carry it)."""
        return self.layout.root.name
