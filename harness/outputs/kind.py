"""What an output kind is: a sink a team's application writes and the harness observes instead of running it.

One module per kind (harness/outputs/kinds/) defines one `OutputKind`. The scenario parser finds an output's kind by
the field that marks it (`topic`, `table`, `format`: its `marker`, and its `variant` among the kinds sharing one)
and lets the kind read its fields (`parse`). The runner asks each output's `Sink` (made by its kind for one run) to
prepare it before the application starts, to fill the job's placeholders, to show the records it holds now (the
preflight's canary), to say when the job last committed to it (an in-flight kill's moment) and, once the drivers
stopped, to export what it saw into the run directory as the egress store's contract tables. A kind depends on the
narrow interface of the run in outputs/run.py, never on the runner. pipeline.json gives every output its kind's
`family` (contract/applications.py), which is all the checker reads of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Protocol

from contract.applications import OUTPUT_KINDS
from harness.field import Field

if TYPE_CHECKING:
    from harness.outputs.run import OutputRun

Reader = tuple[dict, Callable[[], list[dict]]]  # an identity, and the records an output holds now (as {"value": ...})


class Probe(Protocol):
    """What an in-flight kill and the status line ask of an output while its job runs."""

    def latest_ms(self) -> int: ...  # when the job last committed to it (0: never yet)

    def delivered(self) -> int | None: ...  # rows the job has offered it so far (None: not known this time)

    def close(self) -> None: ...


class Sink(Protocol):
    """One output of a kind in one run: what the runner asks of it."""

    def prepare(self) -> dict | None: ...  # before its job starts: output_prepared's fields (None: nothing to do)

    def placeholders(self) -> dict[str, str]: ...  # what the job's command may name (${table.NAME}, ${path.NAME})

    def reader(self) -> Reader | None: ...  # the records it holds now (None: no record's copy, a windowed count)

    def probe(self) -> Probe | None: ...  # when its job last committed (None: nothing to watch)

    def export(self) -> dict | None: ...  # after the drivers stopped, into the run directory: output_exported's fields


@dataclass(frozen=True)
class Placeholder:
    """A placeholder an output offers a job's command, ${PREFIX.NAME}: `noun` and `plural` name what NAME must be
    in an error ("output table", "tables")."""

    prefix: str
    help: str
    noun: str
    plural: str


# The fields every kind of output may take (each kind's parse reads them through OutputSpec's methods).
IDENTITY = Field("identity", dict, None, "where its rows' key and seq are read (docs/applications.md)")
WRITTEN_BY = Field("written_by", str, None, "the application writing it (the only one, by default)")
RECEIVES = Field("receives", str, None, "which records the job sends it: a filter over the record's fields")


class OutputSpec(Protocol):
    """An output as the scenario gives it, while the scenario is read (harness/scenario/applications.py): what a
    kind's `parse` reads and checks its fields with."""

    name: str
    path: str  # outputs.NAME, where its errors point
    values: dict[str, Any]  # each of its kind's fields read as declared (its default where absent)
    written: dict[str, str]  # topic -> the application writing it
    record: dict | None  # the workload's record template (None: the harness's own records)
    folder: Path | None  # the scenario's folder, where relative paths start

    def identity(self) -> dict: ...  # its `identity`, checked

    def writer(self) -> str: ...  # its `written_by`, checked (the only application, when there is one)

    def receives(self) -> str | None: ...  # its `receives`, checked against the record template

    def nested(
        self, key: str, fields: tuple[Field, ...]
    ) -> dict | None: ...  # the mapping at `key` (a.b: inside a's) read (None: absent)

    def error(self, where: str, why: str) -> Exception: ...  # a scenario error at PATH.where


@dataclass(frozen=True)
class OutputKind:
    """A kind of output.

    `family` is the kind pipeline.json gives its outputs (a Kafka topic, a table, a table of files: what the
    checker reads). In a scenario, `marker` is the field that says an output is of its family and `variant` the
    setting that tells it from the family's other kinds (("format", "delta")), None for a family of one kind; the
    first kind of a family with `default_variant` is taken when the setting is left out. `fields` are the fields it
    allows, each declared once (harness/field.py: the scenario reads them so, docs/scenarios.md lists them),
    `parse(spec)` reads them into the output's settings, `evidence(settings)` says which of the contract's
    egress tables its export writes (contract/egress.py). `placeholders` are what it offers a job's command,
    `offers(name, raw)` the NAME it offers for each prefix (from its mapping as given, before `parse`).
    `needs_store`: why it needs the scenario's PostgreSQL store (None: it does not); `needs_in_code`, what the
    code of the application writing it must set, and why. `sink(run, name, settings)`
    makes the Sink of output `name` for a run. `jar_sets`: what the application writing it needs on its Spark's
    class path (jars/<set>/pom.xml), each with its release built for each Spark line ("4.1" -> "1.11.0"; a line
    it leaves out or gives None has none served), which its pom is given (harness/spark/lines.py)."""

    name: str
    family: str
    help: str
    marker: str
    fields: tuple[Field, ...]
    parse: Callable[[OutputSpec], dict]
    evidence: Callable[[dict], str]
    sink: Callable[[OutputRun, str, dict], Sink]
    variant: tuple[str, Any] | None = None
    default_variant: bool = False
    placeholders: tuple[Placeholder, ...] = ()
    offers: Callable[[str, dict], dict[str, str]] = field(default=lambda name, raw: {})
    needs_store: str | None = None
    needs_in_code: tuple[str, str] | None = None  # (a pattern its writer's code must match, why: refused without it)
    jar_sets: dict[str, dict[str, str | None]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.family not in OUTPUT_KINDS:
            raise ValueError(f"output kind {self.name!r}: family must be one of {', '.join(OUTPUT_KINDS)}")

    def holds(self, family: str, settings: dict) -> bool:
        """Whether an output of `family` with `settings` is of this kind."""
        if family != self.family or self.marker not in settings:  # a family's kinds each have their marker
            return False
        return self.variant is None or settings.get(self.variant[0]) == self.variant[1]
