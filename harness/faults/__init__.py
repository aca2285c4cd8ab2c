"""Fault kinds as plug-ins: each kind is one FaultKind, in its own module.

Built-in kinds are the modules of harness/faults/kinds/ (each defines `KIND`); a scenario names a kind of
one's own as `package.module:attr`, imported from the scenario's import paths (docs/faults.md).
"""

from __future__ import annotations

from functools import cache

from contract.plugins import PluginError, builtin_kinds, import_named
from harness.faults.kind import TARGETS, FaultKind, Param, TargetGone

BUILTIN_PACKAGE = "harness.faults.kinds"

__all__ = ["FaultKind", "Param", "TARGETS", "TargetGone", "FaultKindError", "builtin_fault_kinds", "load_fault_kind"]


class FaultKindError(Exception):
    """A fault kind that cannot be used; the message says why, in one line."""


@cache
def builtin_fault_kinds() -> dict[str, FaultKind]:
    """Name -> kind, for every built-in fault kind."""
    return builtin_kinds(BUILTIN_PACKAGE, FaultKind)


def load_fault_kind(name: str) -> FaultKind:
    """The kind a scenario names: a built-in name, or package.module:attr holding a FaultKind."""
    if ":" not in name:
        builtins = builtin_fault_kinds()
        if name not in builtins:
            raise FaultKindError(
                f"expected one of {', '.join(builtins)} (or package.module:attr for a kind of your own), got {name!r}"
            )
        return builtins[name]
    try:
        kind = import_named(name, "attr")
    except PluginError as exc:
        raise FaultKindError(str(exc)) from None
    if not isinstance(kind, FaultKind):
        raise FaultKindError(f"{name} is not a fault kind (a harness.faults.FaultKind), it is a {type(kind).__name__}")
    return kind
