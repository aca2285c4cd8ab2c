"""Output kinds as plug-ins: each kind is one OutputKind, in its own module.

Built-in kinds are the modules of harness/outputs/kinds/ (each defines `KIND`), found by the field that marks an
output; a scenario names a kind of one's own as `kind: package.module:attr`, imported from the scenario's import
paths (docs/applications.md), and its outputs' settings keep that name. The runner reaches an output only through
its kind's Sink (`sinks`).
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Mapping, Protocol

from contract.applications import OUTPUT_KINDS
from contract.plugins import PluginError, builtin_kinds, import_named
from harness.outputs.kind import OutputKind, Probe, Reader, Sink

if TYPE_CHECKING:
    from harness.outputs.run import OutputRun

BUILTIN_PACKAGE = "harness.outputs.kinds"

__all__ = [
    "OutputKind",
    "Probe",
    "Reader",
    "Sink",
    "OutputKindError",
    "builtin_output_kinds",
    "kind_of",
    "load_output_kind",
    "sinks",
]
OWN_KIND = "kind"  # the setting naming an output's kind of one's own (package.module:attr)


class OutputKindError(Exception):
    """An output kind that cannot be used; the message says why, in one line."""


class Declared(Protocol):
    """A streamlet as the scenario declares it (harness/scenario/blueprint.py's StreamletInstance): its kind, for an
    output its family, and its settings."""

    kind: str
    settings: dict


@cache
def builtin_output_kinds() -> dict[str, OutputKind]:
    """Name -> kind, for every built-in output kind."""
    return builtin_kinds(BUILTIN_PACKAGE, OutputKind)


def load_output_kind(spec: str) -> OutputKind:
    """A kind of one's own: package.module:attr holding an OutputKind."""
    try:
        kind = import_named(spec, "attr")
    except PluginError as exc:
        raise OutputKindError(str(exc)) from None
    if not isinstance(kind, OutputKind):
        raise OutputKindError(
            f"{spec} is not an output kind (a harness.outputs.OutputKind), it is a {type(kind).__name__}"
        )
    return kind


def kind_of(family: str, settings: dict) -> OutputKind | None:
    """The kind of an output of `family` (pipeline.json's kind) with `settings`; None for what is no output."""
    if OWN_KIND in settings and family in OUTPUT_KINDS:
        return load_output_kind(settings[OWN_KIND])
    return next((k for k in builtin_output_kinds().values() if k.holds(family, settings)), None)


def sinks(run: OutputRun, streamlets: Mapping[str, Declared]) -> dict[str, Sink]:
    """The Sink of each output among `streamlets`, for `run`."""
    found = {}
    for name, declared in streamlets.items():
        kind = kind_of(declared.kind, declared.settings)
        if kind is not None:
            found[name] = kind.sink(run, name, declared.settings)
    return found
