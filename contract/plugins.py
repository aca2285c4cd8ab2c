"""Plug-ins: the built-in kinds found by scanning their package, and those of one's own (streamlet classes, fault
and output kinds) named `package.module:attr`."""

from __future__ import annotations

import importlib
import pkgutil
import sys

# The harness's own top-level packages: imported before any folder of a user's, so a package of theirs by one of
# these names is never imported (docs/streamlets.md).
OWN_PACKAGES = ("harness", "pipelines", "contract")


class PluginError(Exception):
    """A named plug-in that cannot be imported; the message says why, in one line."""


def builtin_kinds(package: str, kind: type) -> dict[str, object]:
    """Name -> kind, for every module of `package` defining `KIND`, an instance of `kind` (the built-in fault and
    output kinds), by name."""
    found = {}
    for module in pkgutil.iter_modules(importlib.import_module(package).__path__):
        value = getattr(importlib.import_module(f"{package}.{module.name}"), "KIND", None)
        if isinstance(value, kind):
            found[value.name] = value
    return dict(sorted(found.items()))


def import_named(spec: str, what: str) -> object:
    """The attribute `spec` = package.module:attr names, imported from the import paths; every problem is one
    PluginError line."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise PluginError(f"expected package.module:{what}, got {spec!r}")
    writes_bytecode, sys.dont_write_bytecode = sys.dont_write_bytecode, True  # no __pycache__ in a user's folder
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        top = module_name.split(".")[0]
        if top in OWN_PACKAGES and exc.name and module_name.startswith(exc.name):
            raise PluginError(
                f"cannot import {module_name!r}: {top} is the harness's own package, which comes before yours; "
                "a package of yours by that name is never imported: rename it"
            ) from None
        if exc.name and module_name.startswith(exc.name):
            raise PluginError(f"cannot import {module_name!r}: no such module on the import paths") from None
        raise PluginError(f"cannot import {module_name!r}: {type(exc).__name__}: {exc}") from None
    except Exception as exc:  # the user's module failed while importing: say how, in one line
        where = f" (line {exc.lineno})" if isinstance(exc, SyntaxError) else ""
        raise PluginError(
            f"cannot import {module_name!r}: {type(exc).__name__}{where}: "
            f"{str(exc).splitlines()[0] if str(exc) else ''}"
        ) from None
    finally:
        sys.dont_write_bytecode = writes_bytecode
    found = getattr(module, attr, None)
    if found is None:
        raise PluginError(f"module {module_name!r} has no attribute {attr!r}")
    return found
