"""An application's `world`: what its job names that the run must give it, when it is not an argument.

    world:
      kafka: [localhost:9092, kafka:9092]      # broker addresses the job dials: they reach the run's brokers
      master: spark-master:7077                # the spark:// master its code names: one of its own, in its world
      paths:                                   # a path the job names (in its folder, or absolute) -> a run folder
        chk-point-dir: ${checkpoints}
        /tmp/orders-out: ${path.lake}
        /data/cache:                           # none: a folder of the run's own
      files:                                   # a config file the job reads -> its template, placeholders filled
        settings.ini: settings.ini.template
      setup:                                   # commands run once, in the job's world, before its first start
        - [python, create_tables.py]

The job then runs in a network and a mount namespace of its own (harness/world/): only loopback, the team's folder
and the machine's left as they were. Checked here, before anything starts; one line names what is wrong.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from pathlib import Path, PurePosixPath
from typing import Any

from harness.field import Field
from harness.scenario.fields import BlueprintError
from harness.scenario.placeholders import PLACEHOLDER, Known, check_placeholders
from harness.scenario.sections import Section

WORLD = Section(
    "applications.NAME.world",
    (
        Field("kafka", list, [], "the broker addresses its code dials (host:port: a name or loopback)"),
        Field("master", str, None, "the spark:// master its code names (host:port): one of its own, in its world"),
        Field("registry", str, None, "the schema registry its code names (host:port): the run's (record.registry)"),
        Field("paths", dict, {}, "a path it names (in its folder, or absolute) -> a run folder, or none"),
        Field("files", dict, {}, "a config file it reads -> its template, the run's placeholders filled"),
        Field("setup", list, [], "commands run once in its world before its first start"),
    ),
)
HOST = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$")
# The run's folders a mapped path may be given (or none: a folder of the run's own).
FOLDERS = ("checkpoint", "checkpoints", "scratch")
# Where a mapped path may not be: the machine's own folders, which a job's view must keep as they are.
SYSTEM = tuple(
    PurePosixPath(p)
    for p in ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib64", "/proc", "/run", "/sbin", "/sys", "/usr")
)


@functools.cache
def _refusal() -> str | None:
    from harness.world.namespaces import refusal

    return refusal()


LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]", "::1")


def named_hosts(addresses: list[str]) -> list[str]:
    """The host names in `addresses` (host:port) a world's hosts file makes loopback: not loopback's own, no IP."""
    names = {text.rpartition(":")[0] for text in addresses} - set(LOOPBACK_NAMES)
    return sorted(name for name in names if not name.replace(".", "").isdigit())


def broker_host_names(streamlets: dict) -> tuple[str, ...]:
    """The names jobs dial the brokers by in their worlds (a secured cluster's certificates are valid for them)."""
    worlds = [s.settings.get("world") for s in streamlets.values() if s.settings.get("world")]
    return tuple(sorted({name for world in worlds for name in named_hosts(world["kafka"])}))


def parse_world(raw: Any, path: str, known: Known, cwd: Path, folder: Path | None) -> dict | None:
    """An application's world, its paths made absolute (a relative one is in the job's folder `cwd`), its
    templates read (relative to the scenario's `folder`); None without one."""
    if raw is None:
        return None
    v = WORLD.read(raw, path)
    world = {
        "kafka": _addresses(v["kafka"], f"{path}.kafka"),
        "master": _master(v["master"], f"{path}.master"),
        "registry": _registry(v["registry"], f"{path}.registry", known),
        "paths": {},
        "files": {},
        "setup": _setup(v["setup"], f"{path}.setup", known),
    }
    for key, value in v["paths"].items():
        where = _path(key, f"{path}.paths.{key}", cwd, world)
        world["paths"][where] = _folder(value, f"{path}.paths.{key}", known)
    for key, template in v["files"].items():
        where = _path(key, f"{path}.files.{key}", cwd, world)
        world["files"][where] = _template(template, f"{path}.files.{key}", known, folder)
    ports = {text.rpartition(":")[2] for text in world["kafka"]}
    if world["registry"] and world["registry"].rpartition(":")[2] in ports:
        raise BlueprintError(f"{path}.registry", f"{world['registry']}: its port is a broker's it names too")
    if not any(world.values()):
        raise BlueprintError(path, "maps nothing: give its kafka addresses, master, registry, paths, files or setup")
    why = _refusal()
    if why is not None:
        raise BlueprintError(
            path,
            f"needs Linux namespaces, which this machine refuses ({why}); without them a job is given its brokers "
            "and folders by the placeholders of its command (${bootstrap}, ${checkpoint}, ${path.NAME})",
        )
    return world


def _address(text: Any, where: str) -> str:
    """host:port, a name (it resolves to loopback in the job's world) or a loopback address."""
    host, _, port = str(text).rpartition(":")
    if not isinstance(text, str) or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise BlueprintError(where, f"expected host:port, got {text!r}")
    try:
        loopback = ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        loopback = None
    if loopback is False or loopback is None and not HOST.match(host):
        raise BlueprintError(where, f"{text}: only names and loopback addresses are mapped (nothing else is used)")
    return text


def _addresses(raw: list, path: str) -> list[str]:
    found: list[str] = []
    for i, text in enumerate(raw):
        if _address(text, f"{path}[{i}]") in found:
            raise BlueprintError(f"{path}[{i}]", f"{text} is mapped twice")
        found.append(text)
    return found


def _master(raw: str | None, path: str) -> str | None:
    """The master the job's code names (spark://HOST:PORT, given as HOST:PORT): a Spark master and worker of its
    own start in its world at each of its starts."""
    if raw is None:
        return None
    return _address(raw.removeprefix("spark://"), path)


def _registry(raw: str | None, path: str, known: Known) -> str | None:
    """The schema registry the job's code names (http://HOST:PORT, given as HOST:PORT): the run's, in its world."""
    if raw is None:
        return None
    if not (known.record and known.record.get("registry")):
        raise BlueprintError(path, "the run serves no schema registry: workload.record.registry: true starts one")
    return _address(raw.removeprefix("http://").rstrip("/"), path)


def _path(text: str, path: str, cwd: Path, world: dict) -> str:
    """A mapped path, absolute: in the job's folder when relative; refused where it may not be mapped."""
    given = PurePosixPath(text)
    resolved = PurePosixPath(str((cwd / given) if not given.is_absolute() else given))
    parts: list[str] = []
    for part in resolved.parts[1:]:
        if part == "..":
            parts = parts[:-1]
        elif part not in ("", "."):
            parts.append(part)
    where = PurePosixPath("/", *parts)
    if not given.is_absolute() and not where.is_relative_to(cwd):
        raise BlueprintError(path, f"{text} leaves the job's folder ({cwd}): name it as an absolute path")
    if where == PurePosixPath("/") or any(where == s or where.is_relative_to(s) for s in SYSTEM):
        raise BlueprintError(path, f"{where} is one of the machine's own folders, which are not mapped")
    if PurePosixPath(cwd).is_relative_to(where):
        raise BlueprintError(path, f"{where} holds the job's own folder ({cwd}), which is not mapped over")
    if str(where) in world["paths"] or str(where) in world["files"]:
        raise BlueprintError(path, f"{where} is mapped twice")
    return str(where)


def _folder(value: Any, path: str, known: Known) -> str | None:
    """The run folder a path is given: one placeholder (${checkpoint}, ${checkpoints}, ${scratch}, ${path.NAME}),
    or none."""
    if value is None:
        return None
    names = PLACEHOLDER.fullmatch(value) if isinstance(value, str) else None
    if names is None or not (names.group(1) in FOLDERS or names.group(1).startswith("path.")):
        folders = "${checkpoints}, ${checkpoint}, ${scratch}, ${path.NAME}"
        raise BlueprintError(path, f"expected one run folder ({folders}) or nothing, got {value!r}")
    check_placeholders(value, known, path)
    return value


def _template(value: Any, path: str, known: Known, folder: Path | None) -> str:
    """A config file's template (its placeholders checked, line by line), as an absolute path."""
    if not isinstance(value, str) or not value:
        raise BlueprintError(path, f"expected a template file, got {value!r}")
    template = Path(value) if Path(value).is_absolute() else (folder or Path.cwd()) / value
    try:
        lines = template.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise BlueprintError(path, f"{value}: cannot be read ({getattr(exc, 'strerror', None) or exc})") from None
    for number, line in enumerate(lines, 1):
        check_placeholders(line, known, f"{path} ({template.name}:{number})")
    return str(template.resolve())


def _setup(raw: list, path: str, known: Known) -> list[list[str]]:
    steps = []
    for i, command in enumerate(raw):
        if not isinstance(command, list) or not command or not all(isinstance(a, str) and a for a in command):
            raise BlueprintError(f"{path}[{i}]", f"expected a command (a list of arguments), got {command!r}")
        for j, arg in enumerate(command):
            check_placeholders(arg, known, f"{path}[{i}][{j}]")
        steps.append(list(command))
    return steps
