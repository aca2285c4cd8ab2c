"""What a job's code names of its world, read from its own files without running them: broker addresses, checkpoint
folders and Spark masters written as literals, the packages it asks Spark for. `validate` lists those the scenario
does not map; the packages are served offline (harness/spark/packages.py)."""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from pathlib import Path

SOURCES = (".py",)
CONFIGS = (".ini", ".cfg", ".conf", ".properties", ".yaml", ".yml", ".json", ".toml", ".env")
MOST_FILES, MOST_BYTES = 200, 1_000_000  # a job's own files, not a repository's
KAFKA_PORTS = {9092, 9093, 9094, 19092, 29092, 39092}
ADDRESS = re.compile(r"(?<![\w.:/-])([A-Za-z][\w.-]*|\d+\.\d+\.\d+\.\d+):(\d{2,5})\b")
CHECKPOINT = re.compile(r"^\s*[\w.-]*checkpoint[\w.-]*\s*[:=]\s*['\"]?([^'\"{}\s,]+)", re.IGNORECASE)
MASTER = re.compile(r"spark://([\w.-]+:\d+)")
PACKAGES = re.compile(r"^spark\.jars\.packages = (\S+)$|--packages[ =](\S+)")


@dataclass(frozen=True)
class Named:
    """Something a job's code names: what it is (kafka, checkpoint, master, packages), the text, where."""

    kind: str
    text: str
    where: str  # file:line, the file relative to the job's folder


# Options taking a value: Python's before its script; spark-submit's all do but these flags.
PYTHON_VALUED = {"-X", "-W", "-Q"}
SPARK_SUBMIT_FLAGS = {"--verbose", "-v", "--supervise", "--help", "-h", "--version"}


def runs_at(command: list[str] | tuple[str, ...]) -> int | None:
    """Where in a command the script it runs is, or `-m` (python's module): the first argument past the launcher's
    options; len(command) when it names nothing; None for code on the command line (`python -c`)."""
    i = 1
    while i < len(command) and command[i].startswith("-") and command[i] != "-m":
        if command[i] == "-c":
            return None
        valued = command[i] in PYTHON_VALUED if command[0] == "python" else command[i] not in SPARK_SUBMIT_FLAGS
        i += 2 if valued and "=" not in command[i] else 1
    return i


def job_sources(settings: dict) -> list[Path]:
    """The files of the job's own code the harness can see: the script its command runs, or its entry point's
    module."""
    cwd = Path(settings["cwd"])
    if settings["entry"]:
        module = settings["entry"].split(":")[0]
        return [cwd / (module.replace(".", "/") + ".py"), cwd / module.replace(".", "/") / "__init__.py"]
    command, i = settings["command"], runs_at(settings["command"])
    return [cwd / command[i]] if i is not None and i < len(command) and command[i].endswith(".py") else []


def _files(settings: dict) -> list[Path]:
    """The job's own files: the script it runs (or its entry point's module), the modules of its folder that
    imports, and the config files their code names (a literal ending in .ini, .yaml, ...)."""
    cwd = Path(settings["cwd"])
    todo, found = [p for p in job_sources(settings) if p.is_file()], []
    while todo and len(found) < MOST_FILES:
        file = todo.pop(0)
        if file in found:
            continue
        found.append(file)
        if file.suffix not in SOURCES:
            continue
        try:
            tree = ast.parse(file.read_text())
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            modules = []
            if isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                modules = [node.module]
            for module in modules:
                base = cwd / module.replace(".", "/")
                todo += [p for p in (base.with_suffix(".py"), base / "__init__.py") if p.is_file()]
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.endswith(CONFIGS):
                named = Path(node.value) if Path(node.value).is_absolute() else cwd / node.value
                todo += [named] if named.is_file() else []
    return found


def _in_code(text: str) -> list[tuple[int, str, str]]:
    """What a Python file names: (line, kind, text) for each string it passes as an option's value or binds to a
    name (`CHECKPOINT = "/tmp/ck"`, `.option("checkpointLocation", ...)`, an option given a constant bound so) and
    each address literal; none where it does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    constants = {
        target.id: node.value.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    found = []
    for node in ast.walk(tree):
        named, value = None, None
        if isinstance(node, ast.Call) and len(node.args) == 2 and isinstance(node.args[0], ast.Constant):
            named, value = str(node.args[0].value), node.args[1]
            if isinstance(value, ast.Name) and value.id in constants:
                value = ast.Constant(constants[value.id])
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            named = " ".join(t.id for t in targets if isinstance(t, ast.Name)) or None
            value = node.value
        if named and isinstance(value, ast.Constant) and isinstance(value.value, str):
            found += [(node.lineno, kind, t) for kind, t in _named(f"{named} = {value.value}")]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and MASTER.search(node.value):
            found += [(node.lineno, kind, t) for kind, t in _named(node.value)]
    return found


def _named(text: str) -> list[tuple[str, str]]:
    found = []
    for host, port in ADDRESS.findall(text):
        if int(port) in KAFKA_PORTS or re.search(r"bootstrap|broker|kafka", text, re.IGNORECASE):
            found.append(("kafka", f"{host}:{port}"))
    found += [("checkpoint", path) for path in CHECKPOINT.findall(text)]
    found += [("master", f"spark://{address}") for address in MASTER.findall(text)]
    found += [("packages", a or b) for a, b in PACKAGES.findall(text)]
    return found


def scan(settings: dict) -> list[Named]:
    """Everything the job's own files name (an application's settings), in file and line order (each text once,
    where it is first named)."""
    folder = Path(settings["cwd"])
    seen, found = set(), []
    for file in _files(settings):
        try:
            if file.stat().st_size > MOST_BYTES:
                continue
            text = file.read_text()
        except (OSError, UnicodeDecodeError):
            continue
        if file.suffix in SOURCES:
            named = _in_code(text)
        else:
            named = [(n, kind, t) for n, line in enumerate(text.splitlines(), 1) for kind, t in _named(line)]
        for number, kind, text in sorted(named):
            if (kind, text) not in seen:
                seen.add((kind, text))
                shown = file.relative_to(folder) if file.is_relative_to(folder) else file
                found.append(Named(kind, text, f"{shown}:{number}"))
    return found


WHY = {
    "kafka": "a broker address its world does not map (world.kafka)",
    "checkpoint": "a checkpoint folder its world does not map (world.paths)",
    "master": "a Spark master its world does not give it (world.master)",
}


def unmapped(named: list[Named], world: dict | None, cwd: Path) -> list[Named]:
    """What the job names that its world does not map (the brokers' addresses, its checkpoint folders, a master);
    a config file the world renders anew is not the job's any more."""
    world = world or {"kafka": [], "master": None, "paths": {}, "files": {}}
    left = []
    for item in named:
        if str(cwd / item.where.rpartition(":")[0]) in world["files"]:
            continue
        if item.kind == "kafka" and item.text not in world["kafka"]:
            left.append(item)
        elif item.kind == "checkpoint":
            where = os.path.normpath(item.text if os.path.isabs(item.text) else cwd / item.text)
            if not any(where == p or where.startswith(p.rstrip("/") + "/") for p in world["paths"]):
                left.append(item)
        elif item.kind == "master" and item.text != f"spark://{world['master']}":
            left.append(item)
    return left


def notes(applications: dict[str, dict]) -> list[str]:
    """For `validate`: per application (name -> its settings), what its code names that the scenario does not
    give it, one line each."""
    lines = []
    for name, settings in applications.items():
        cwd, given = Path(settings["cwd"]), " ".join([*settings["command"], *settings["env"].values()])
        passed = {"kafka": "${bootstrap}" in given, "checkpoint": "${checkpoint" in given, "master": False}
        for item in unmapped(scan(settings), settings.get("world"), cwd):
            if not passed[item.kind]:  # the command gives it: what the code names is a default it does not use
                lines.append(f"applications.{name}: {item.where} names {item.text}: {WHY[item.kind]}")
    return lines


def packages_named(settings: dict) -> list[tuple[str, str]]:
    """The packages the job's code asks Spark for (`spark.jars.packages`, a `--packages` in PYSPARK_SUBMIT_ARGS):
    (where, the comma-separated list)."""
    return [(item.where, item.text) for item in scan(settings) if item.kind == "packages"]
