"""The run's outputs: each output's sink (made by its kind, harness/outputs/), their probes while the run goes on,
and after the drivers stopped what the outputs and the egresses' PostgreSQL stores hold, copied into the run
directory: the checker reads files only."""

from __future__ import annotations

from contract.roles import EGRESS
from harness.evidence.history import STORE_COPIED
from harness.outputs import Probe, Sink, sinks
from harness.outputs.run import OutputRun
from harness.scenario import Scenario
from pipelines.stores import egress_store


class Outputs:
    """The outputs of one run, by name."""

    def __init__(self, run: OutputRun, scenario: Scenario):
        self.run = run
        self.scenario = scenario
        self.sinks: dict[str, Sink] = sinks(run, scenario.blueprint.streamlets)  # each output's, by its kind

    def probes(self, name: str | None = None) -> list[Probe]:
        """Probes of the outputs application `name` writes (None: every output): when it last committed to one
        (in-flight kills), how many rows it offered (the status line)."""
        streamlets = self.scenario.blueprint.streamlets
        return [
            probe
            for output, sink in self.sinks.items()
            if (name is None or streamlets[output].settings.get("written_by") == name)
            and (probe := sink.probe()) is not None
        ]

    def export(self) -> None:
        """After the drivers stopped: what each output holds and what it was offered, into the run directory."""
        for sink in self.sinks.values():
            sink.export()

    def save_stores(self) -> None:
        """Copy each PostgreSQL egress's tables into the run directory."""
        if not self.scenario.store_url:
            return
        for name, inst in self.scenario.blueprint.streamlets.items():
            if inst.role == EGRESS and inst.runs:
                paths = self.run.driver_paths(name)
                copied = egress_store(paths, self.scenario.store_url).copy_to(egress_store(paths))
                self.run.history.record(STORE_COPIED, streamlet=name, rows=copied)
