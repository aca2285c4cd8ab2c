"""Output kinds as plug-ins: each kind is one OutputKind, in its own module.

Built-in kinds are the modules of harness/outputs/kinds/ (each defines `KIND`). The runner reaches an output only
through its kind's Sink: `sinks(run, outputs)` makes them, and the functions below walk them.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from typing import TYPE_CHECKING, Mapping, Protocol

from harness.outputs.kind import OutputKind, Probe, Reader, Sink

if TYPE_CHECKING:
    from harness.outputs.run import OutputRun

BUILTIN_PACKAGE = "harness.outputs.kinds"

__all__ = ["OutputKind", "Probe", "Reader", "Sink", "builtin_output_kinds", "kind_of", "sinks"]


class Declared(Protocol):
    """A streamlet as the scenario declares it (harness/scenario/blueprint.py's StreamletInstance): its kind, for an
    output its family, and its settings."""

    kind: str
    settings: dict


@cache
def builtin_output_kinds() -> dict[str, OutputKind]:
    """Name -> kind, for every built-in output kind."""
    package = importlib.import_module(BUILTIN_PACKAGE)
    found = {}
    for module in pkgutil.iter_modules(package.__path__):
        kind = getattr(importlib.import_module(f"{BUILTIN_PACKAGE}.{module.name}"), "KIND", None)
        if isinstance(kind, OutputKind):
            found[kind.name] = kind
    return dict(sorted(found.items()))


def kind_of(family: str, settings: dict) -> OutputKind | None:
    """The kind of an output of `family` (pipeline.json's kind) with `settings`; None for what is no output."""
    return next((k for k in builtin_output_kinds().values() if k.holds(family, settings)), None)


def sinks(run: OutputRun, streamlets: Mapping[str, Declared]) -> dict[str, Sink]:
    """The Sink of each output among `streamlets`, for `run`."""
    found = {}
    for name, declared in streamlets.items():
        kind = kind_of(declared.kind, declared.settings)
        if kind is not None:
            found[name] = kind.sink(run, name, declared.settings)
    return found
