"""From a blueprint's `kind` to the streamlet class, checked before anything starts.

A built-in kind is a short name declared by a class in pipelines/builtin/ (found by scanning that package);
anything else is a user's class named `package.module:Class`, imported from sys.path plus the scenario's
import paths. Every problem is one line (KindError) naming what is wrong.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys
from functools import cache

from contract.egress import EVIDENCE_KINDS, EXPORTED, RECORDS, WINDOWS
from contract.plugins import PluginError, import_named
from pipelines.model import CODECS, Inlet, Outlet, Schema, Setting, Shape, Streamlet

BUILTIN_PACKAGE = "pipelines.builtin"


class KindError(Exception):
    """A streamlet kind that cannot be used; the message says why."""


@cache
def builtin_kinds() -> dict[str, type[Streamlet]]:
    """Short name -> class, for every built-in streamlet."""
    package = importlib.import_module(BUILTIN_PACKAGE)
    found = {}
    for module in pkgutil.iter_modules(package.__path__):
        for _, cls in inspect.getmembers(importlib.import_module(f"{BUILTIN_PACKAGE}.{module.name}"), inspect.isclass):
            if issubclass(cls, Streamlet) and cls.__dict__.get("kind"):
                found[cls.kind] = cls
    return found


def add_import_paths(paths) -> None:
    """Let user streamlets be imported from `paths` (a scenario's folder by default). They come after the
    harness's own packages, so a user's folder cannot shadow them."""
    for path in map(str, paths):
        if path not in sys.path:
            sys.path.append(path)


def load_kind(kind: str) -> type[Streamlet]:
    """The checked class implementing `kind`."""
    if not isinstance(kind, str) or not kind:
        raise KindError(f"expected a streamlet kind (a built-in name or package.module:Class), got {kind!r}")
    if ":" not in kind:
        builtins = builtin_kinds()
        if kind not in builtins:
            raise KindError(
                f"unknown streamlet kind {kind!r} (built-in: {', '.join(sorted(builtins))}; "
                "a streamlet of your own is named package.module:Class)"
            )
        return builtins[kind]
    try:
        cls = import_named(kind, "Class")
    except PluginError as exc:
        raise KindError(str(exc)) from None
    if not (inspect.isclass(cls) and issubclass(cls, Streamlet)):
        raise KindError(f"{kind} is not a streamlet class (subclass pipelines.api.Streamlet)")
    check_class(cls, kind)
    return cls


def check_class(cls: type[Streamlet], kind: str) -> None:
    """The declarations the harness relies on: a shape of typed ports, typed settings, a build method."""
    shape = cls.shape
    if not isinstance(shape, Shape):
        raise KindError(f"{kind}: `shape` must be a pipelines.api.Shape, got {type(shape).__name__}")
    for ports, port_type, word in ((shape.inlets, Inlet, "inlet"), (shape.outlets, Outlet, "outlet")):
        if not isinstance(ports, tuple) or not all(isinstance(p, port_type) for p in ports):
            raise KindError(f"{kind}: shape.{word}s must be a tuple of {port_type.__name__}")
        names = [p.name for p in ports]
        if len(set(names)) != len(names):
            raise KindError(f"{kind}: two {word}s named {next(n for n in names if names.count(n) > 1)!r}")
        for port in ports:
            if not isinstance(port.schema, Schema):
                raise KindError(f"{kind}: {word} {port.name!r} has no Schema")
            if port.codec is not None and port.codec not in CODECS:
                raise KindError(
                    f"{kind}: {word} {port.name!r}: codec {port.codec!r} is not supported (supported: "
                    f"{', '.join(CODECS)}, "
                    "or None: the topic's)"
                )
    for port in shape.outlets:
        if port.partition_key not in {f.name for f in port.schema.fields}:
            raise KindError(
                f"{kind}: outlet {port.name!r} is keyed by {port.partition_key!r}, not a field of {port.schema.id}"
            )
    if not shape.inlets and not cls.reads_source:
        raise KindError(f"{kind}: reads nothing (no inlets and reads_source is false)")
    if cls.reads_source and shape.inlets:
        raise KindError(f"{kind}: an ingress (reads_source) has no inlets")
    if not shape.outlets and cls.egress_evidence not in EVIDENCE_KINDS:
        raise KindError(
            f"{kind}: an egress (no outlets) must declare egress_evidence {EXPORTED!r} (ctx.audit and "
            f"export_state, harness docs streamlets), or {RECORDS!r} or {WINDOWS!r} (the built-in store's tables)"
        )
    if cls.egress_evidence == EXPORTED and cls.export_state is Streamlet.export_state:
        raise KindError(f"{kind}: egress_evidence is {EXPORTED!r} but it has no export_state(self, ctx) method")
    settings = cls.settings
    if not isinstance(settings, dict) or not all(
        isinstance(k, str) and isinstance(v, Setting) for k, v in settings.items()
    ):
        raise KindError(f"{kind}: `settings` must map names to pipelines.api.Setting")
    if not isinstance(cls.spark_jars, tuple) or not all(isinstance(j, str) for j in cls.spark_jars):
        raise KindError(f"{kind}: `spark_jars` must be a tuple of jar set names")
    if not isinstance(cls.spark_conf, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in cls.spark_conf.items()
    ):
        raise KindError(f"{kind}: `spark_conf` must map Spark setting names to text values")
    if cls.build is Streamlet.build:
        raise KindError(f"{kind}: has no build(self, ctx) method")


def resolve_settings(cls: type[Streamlet], given: dict, kind: str) -> tuple[dict, str | None, str | None]:
    """The settings with defaults filled in, or (…, the setting at fault, why)."""
    for name, value in given.items():
        if name not in cls.settings:
            return {}, name, f"unknown setting for {kind} (known: {', '.join(cls.settings) or 'none'})"
        problem = cls.settings[name].problem(value)
        if problem:
            return {}, name, problem
    return {name: given.get(name, setting.default) for name, setting in cls.settings.items()}, None, None
