"""Applications: a team's own PySpark streaming jobs, started unchanged by their own command, and the outputs the
harness reads where they write (the scenario's `applications` and `outputs` sections, docs/applications.md).

In the pipeline an application is a streamlet whose driver is the team's command (an ingress when it reads the
workload's source topic), and an output is an egress the harness observes instead of running: a Kafka topic an
application writes, recorded as every hop is, its records' identity read where the output says. So the runner,
the faults and the checker treat them as they treat streamlets, and pipeline.json describes them the same way.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

from contract.aggregates import aggregate_fields
from contract.applications import APPLICATION, OUTPUT_KINDS, REAL_TIME
from contract.identity import problem as identity_problem
from contract.plugins import PluginError, import_named
from harness.errors import HarnessError
from harness.field import Field
from harness.outputs import OWN_KIND, OutputKind, OutputKindError, builtin_output_kinds, load_output_kind
from harness.outputs.aggregate import appended_window
from harness.scenario.blueprint import (
    Blueprint,
    BlueprintError,
    Connection,
    StreamletInstance,
    TopicSpec,
    topic_spec,
    topological_order,
)
from harness.scenario.declared import APPLICATION_FIELDS, DEDUPLICATES, SCHEDULE
from harness.scenario.fields import Fields
from harness.scenario.job_code import job_sources, packages_named, runs_at
from harness.scenario.joins import parse_joins
from harness.scenario.placeholders import PLACEHOLDER, Known, check_placeholders
from harness.scenario.sections import Section
from harness.scenario.world import parse_world
from harness.spark.packages import parse as parse_packages
from harness.workload.predicate import Predicate, PredicateError
from harness.workload.template import record_fields
from pipelines.kinds import add_import_paths
from pipelines.model import Inlet, Outlet, Schema, Shape, Streamlet

# An application's records are its own: the harness neither knows nor checks their fields (JSON values).
OWN_RECORD = Schema("ApplicationRecord", ())
LAUNCHERS = ("python", "spark-submit")  # how a command may start: the drivers' Python, or their Spark's spark-submit


class Application(Streamlet):
    """A team's job: the harness starts its command (settings: command, env, cwd) and never imports its code."""

    kind = APPLICATION

    @classmethod
    def drops_late_events(cls, settings: dict) -> bool:
        # A job that deduplicates or counts within a watermark drops what arrives behind it (Spark's stateful
        # operators do).
        return bool(settings.get("deduplicates") or settings.get("window"))

    @classmethod
    def event_time_window(cls, settings: dict) -> str | None:
        return (settings.get("window") or {}).get("size")

    @classmethod
    def event_time_slide(cls, settings: dict) -> str | None:
        return (settings.get("window") or {}).get("slide")


class Output(Streamlet):
    """An output: not run, read where its application writes it, as its kind says (harness/outputs/kinds/)."""


SETS_MASTER = re.compile(r"\.master\(|setMaster\(|spark\.master")
# What only Databricks' runtime gives a job: its utilities, a notebook's magics and cell markers.
DATABRICKS = re.compile(r"\bdbutils\.|^# MAGIC|^# COMMAND -{5,}|^\s*%(run|sql|pip|fs)\b|\bspark\.databricks\.service")
# Stores a job may write that the harness cannot start (their connector's format, their client's import, settings).
UNSERVED = {
    "Cassandra": re.compile(r"org\.apache\.spark\.sql\.cassandra|\bspark\.cassandra\.|^\s*(from|import) cassandra\b"),
    "MongoDB": re.compile(
        r"format\(\s*[\"'](mongodb|mongo|com\.mongodb\.spark\.sql)|\bspark\.mongodb\.|^\s*(from|import) pymongo\b"
    ),
    "Elasticsearch": re.compile(
        r"format\(\s*[\"'](es|org\.elasticsearch\.spark\.sql)[\"']|\bes\.nodes\b|^\s*(from|import) elasticsearch\b"
    ),
    "ClickHouse": re.compile(r"jdbc:clickhouse|^\s*(from|import) clickhouse_(connect|driver)\b"),
}


def _first_line(settings: dict, pattern: re.Pattern) -> tuple[str, str] | None:
    """Where the job's own code (job_sources) first matches `pattern`, outside comments: ("job.py:12", the line)."""
    for file in job_sources(settings):
        try:
            lines = file.read_text().splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        for number, line in enumerate(lines, 1):
            if pattern.search(line if pattern is DATABRICKS else line.split("#")[0]):
                return f"{file.name}:{number}", line.strip()
    return None


def own_master(settings: dict) -> str | None:
    """Where an application's code sets its own Spark master ("job.py:12"), which would keep its executors off the
    cluster the harness starts (None: nowhere the harness can see)."""
    found = _first_line(settings, SETS_MASTER)
    return found[0] if found else None


def _strings(value: Any, path: str, what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
        raise BlueprintError(path, f"expected a non-empty list of {what}, got {value!r}")
    return tuple(value)


def _application(name: str, raw: Any, known: Known, folder: Path | None) -> dict:
    path = f"applications.{name}"
    v = APPLICATION_FIELDS.read(raw, path)
    cwd = Path(v["cwd"])
    if not cwd.is_absolute():
        cwd = (folder or Path.cwd()) / cwd
    if not cwd.is_dir():
        raise BlueprintError(f"{path}.cwd", f"no such folder: {cwd}")
    command, entry, settings = _start(v, set(raw), path, known, cwd)
    start = {"cwd": cwd, "entry": entry, "command": command}
    databricks = _first_line(start, DATABRICKS)
    if databricks:
        raise BlueprintError(
            path,
            f"{databricks[0]}: {databricks[1][:60]!r} is written for Databricks' runtime, which the harness "
            "cannot give (its dbutils, notebook magics and cells)",
        )
    unserved = [(store, found) for store, p in UNSERVED.items() if (found := _first_line(start, p))]
    if unserved and not known.own_kind:
        store, (where, line) = unserved[0]
        raise BlueprintError(
            path,
            f"{where}: {line[:60]!r} writes to {store}, which the harness cannot start: judge what it writes with "
            "an output kind of your own (docs/applications.md, An output kind of your own)",
        )
    env = v["env"]
    for key, value in env.items():
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise BlueprintError(f"{path}.env.{key}", f"expected text, got {value!r}")
        check_placeholders(str(value), known, f"{path}.env.{key}", secret=True)
    return {
        "command": command,
        "entry": entry,
        "settings": settings,
        "env": {str(k): str(v) for k, v in env.items()},
        "cwd": str(cwd.resolve()),
        "reads": _strings(v["reads"], f"{path}.reads", "topic names"),
        "writes": _strings(v["writes"], f"{path}.writes", "topic names") if v["writes"] else (),
        "keeps": _declared_filter(v["keeps"], known.record, f"{path}.keeps"),
        "deduplicates": _deduplicates(v["deduplicates"], f"{path}.deduplicates"),
        "joins": parse_joins(v["joins"], known.record, cwd.resolve(), f"{path}.joins"),
        "trigger": _trigger(v, path),
        "schedule": SCHEDULE.read(v["schedule"], f"{path}.schedule") if v["schedule"] is not None else None,
        "world": parse_world(v["world"], f"{path}.world", known, cwd.resolve(), folder),
        "packages": _packages(v["packages"], path, start),
        "requirements": _requirements(v["requirements"], f"{path}.requirements", cwd),
    }


def _needs_in_code(name: str, kind: OutputKind, writer: dict | None) -> None:
    """An output whose kind reads it right only if its job's code sets something (a console sink's numRows)."""
    if kind.needs_in_code is None or writer is None:
        return
    pattern, why = kind.needs_in_code
    start = {"cwd": Path(writer["cwd"]), "entry": writer["entry"], "command": writer["command"]}
    if _first_line(start, re.compile(pattern)) is None:
        raise BlueprintError(f"outputs.{name}", why)


def _packages(given: list, path: str, start: dict) -> list[str]:
    """The packages the job asks Spark for: those its code names (spark.jars.packages) and those the scenario adds
    (`packages`, for a list the code builds), each checked to be group:artifact:version."""
    named = [(f"{path} ({where})", text) for where, text in packages_named(start)]
    named += [(f"{path}.packages[{i}]", text) for i, text in enumerate(given)]
    found: list[str] = []
    for where, text in named:
        if not isinstance(text, str):
            raise BlueprintError(where, f"expected group:artifact:version, got {text!r}")
        try:
            found += [str(p) for p in parse_packages(text, where) if str(p) not in found]
        except HarnessError as exc:
            raise BlueprintError(where, str(exc).split(": ", 1)[-1]) from None
    return found


def _requirements(raw: Any, path: str, cwd: Path) -> list[str]:
    """The job's own Python requirements: a requirements file (in its folder) or a list, one requirement a line
    (installed before the run starts: harness/spark/requirements.py)."""
    if raw is None:
        return []
    if isinstance(raw, str):
        file = Path(raw) if Path(raw).is_absolute() else cwd / raw
        try:
            raw = file.read_text().splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise BlueprintError(path, f"{raw}: cannot be read ({getattr(exc, 'strerror', None) or exc})") from None
    if not isinstance(raw, list) or not all(isinstance(line, str) for line in raw):
        raise BlueprintError(path, f"expected a requirements file or a list of requirements, got {raw!r}")
    lines = [line.split("#")[0].strip() for line in raw]
    for line in filter(None, lines):
        if line.startswith("-"):
            raise BlueprintError(path, f"{line!r}: pip's options are not read here: list the requirements themselves")
    return [line for line in lines if line]


def _trigger(v: dict, path: str) -> str:
    """How the job's query runs (contract/applications.py TRIGGERS). A Real-time Mode query checkpoints only at
    the end of each interval: the harness sees it up by its output (harness/runner/streamlets.py), so it must
    write topics."""
    trigger = v["trigger"]
    if trigger == REAL_TIME and v["schedule"] is not None:
        raise BlueprintError(f"{path}.schedule", "a real-time query runs on: it ends after no run to start again")
    if trigger == REAL_TIME and not v["writes"]:
        raise BlueprintError(
            f"{path}.trigger", "a real-time application is seen running by what it writes: name its topics (writes)"
        )
    return trigger


def _deduplicates(raw: dict | None, path: str) -> dict | None:
    """The job's deduplication by identity, declared: the copies it drops arrive within `within_s` of the first
    (its watermark's delay: Spark's dropDuplicatesWithinWatermark); behind its watermark it drops late records."""
    if raw is None:
        return None
    return DEDUPLICATES.read(raw, path)


def _start(v: dict, given: set, path: str, known: "Known", cwd: Path) -> tuple[list[str], str | None, dict]:
    """How the application starts: its `command`, or an `entry` point (module:function, imported from its folder
    now, so a wrong one is refused before anything starts) called with a SparkSession and its `settings`."""
    if ("command" in given) == ("entry" in given):
        raise BlueprintError(path, "give its command (an argument list) or its entry (module:function), one of them")
    if "entry" in given:
        entry = v["entry"]
        add_import_paths([cwd])
        try:
            function = import_named(entry, "function")
        except PluginError as exc:
            raise BlueprintError(f"{path}.entry", str(exc)) from None
        if not callable(function):
            raise BlueprintError(f"{path}.entry", f"{entry} is not a function")
        settings = v["settings"]
        for key, value in settings.items():
            if not isinstance(value, (str, int, float, bool)):
                raise BlueprintError(f"{path}.settings.{key}", f"expected text, a number or true/false, got {value!r}")
            if isinstance(value, str):
                check_placeholders(value, known, f"{path}.settings.{key}")
        return [], entry, dict(settings)
    if "settings" in given:
        raise BlueprintError(f"{path}.settings", "only with an entry (module:function): a command takes arguments")
    command = _strings(v["command"], f"{path}.command", "arguments")
    if command[0] not in LAUNCHERS:
        raise BlueprintError(
            f"{path}.command", f"expected it to start with {' or '.join(LAUNCHERS)}, got {command[0]!r}"
        )
    if len(command) < 2:
        raise BlueprintError(f"{path}.command", f"names no application after {command[0]}")
    for i, arg in enumerate(command):
        check_placeholders(arg, known, f"{path}.command[{i}]")
    _check_runs_something(command, cwd, f"{path}.command")
    return list(command), None, {}


def _check_runs_something(command: tuple[str, ...], cwd: Path, path: str) -> None:
    """The script a command runs exists in its folder, or the module of `python -m` can be found there or in the
    harness's Python: a wrong name is one line now rather than a job that exits at start."""
    i = runs_at(command)
    if i is None:
        return  # code on the command line: nothing to look for
    if i >= len(command):
        raise BlueprintError(path, f"names no script or module to run after {' '.join(command[:i])}")
    if command[i] == "-m" and command[0] == "python":
        if i + 1 >= len(command):
            raise BlueprintError(f"{path}[{i}]", "-m names no module")
        module = command[i + 1]
        local = cwd / module.replace(".", "/")
        found = local.with_suffix(".py").is_file() or local.is_dir() or _installed(module.split(".")[0])
        if not found and not PLACEHOLDER.search(module):
            raise BlueprintError(f"{path}[{i + 1}]", f"no module {module} in {cwd} or the harness's Python")
        return
    script = command[i]
    if not PLACEHOLDER.search(script) and script.endswith(".py") and not (cwd / script).is_file():
        raise BlueprintError(f"{path}[{i}]", f"no such script: {cwd / script}")


def _installed(top_level: str) -> bool:
    """A top-level module or package the harness's Python can import (found, not imported)."""
    try:
        return importlib.util.find_spec(top_level) is not None
    except (ImportError, ValueError):
        return False


def _declared_filter(sql: str | None, record: dict | None, path: str) -> str | None:
    """What the job keeps (an application's `keeps`) or sends to an output (its `receives`), declared: an SQL
    predicate over the template's fields (harness/workload/predicate.py)."""
    if sql is None:
        return None
    if record is None:
        raise BlueprintError(path, "a filter is over the fields of the workload's records: give workload.record")
    try:
        Predicate(sql, record_fields(record))
    except PredicateError as exc:
        raise BlueprintError(path, str(exc)) from None
    return sql


def _kept(settings: dict) -> str | None:
    """An application's declared filter: its `keeps`, and the one its join with a static table is."""
    parts = [sql for sql in (settings.get("keeps"), (settings.get("joins") or {}).get("keeps")) if sql]
    return " AND ".join(f"({sql})" for sql in parts) if len(parts) > 1 else (parts[0] if parts else None)


def declared_filters(blueprint: Blueprint) -> dict[str, str]:
    """streamlet -> its declared filter: an application's `keeps`, an output's `receives` (the records it drops
    by design are the ones the predicate does not keep)."""
    found = {}
    for name, inst in blueprint.streamlets.items():
        sql = _kept(inst.settings) if inst.kind == APPLICATION else inst.settings.get("receives")
        if inst.kind in (APPLICATION, *OUTPUT_KINDS) and sql:
            found[name] = sql
    return found


def _writer(output: StreamletInstance, written: dict) -> str:
    """The application writing an output: a table's `written_by`, a topic's writer."""
    return output.settings.get("written_by") or written[output.settings["topic"]]


def judged_fields(blueprint: Blueprint) -> list[str]:
    """The record fields the outputs' aggregates are judged by (the values log's: harness/evidence/values.py)."""
    aggregates = [
        inst.settings["aggregate"] for inst in blueprint.streamlets.values() if inst.settings.get("aggregate")
    ]
    return list(dict.fromkeys(name for aggregate in aggregates for name in aggregate_fields(aggregate)))


def _streamlet_class(
    base: type[Streamlet], name: str, inlets: list[str], outlets: list[str], sources: tuple[str, ...] = ()
):
    """A class of its own per application or output: a streamlet's shape is declared on its class, and the source
    topics an application reads (`sources`, by name: it is an ingress)."""
    shape = Shape(
        tuple(Inlet(t, OWN_RECORD, "json") for t in inlets), tuple(Outlet(t, OWN_RECORD, "json") for t in outlets)
    )
    return type(
        f"{base.__name__}[{name}]", (base,), {"shape": shape, "reads_source": bool(sources), "sources_read": sources}
    )


def _written(apps_raw: dict, sources: tuple[TopicSpec, ...]) -> dict[str, str]:
    """topic -> the application writing it (one each, never a source)."""
    written: dict[str, str] = {}
    names = {source.name for source in sources}
    for name, raw in apps_raw.items():
        writes = raw.get("writes") if isinstance(raw, dict) else None
        for topic in _strings(writes, f"applications.{name}.writes", "topic names") if writes else ():
            if topic in names:
                raise BlueprintError(f"applications.{name}.writes", f"{topic!r} is the workload's source topic")
            if topic in written:
                raise BlueprintError(f"applications.{name}.writes", f"topic {topic!r} is written by {written[topic]}")
            written[topic] = name
    return written


# What every output may say besides its kind's fields: which source topics its records come from.
OUTPUT_SOURCES = Field(
    "sources", list, None, "the source topics its records come from (by default every one its writer reads)"
)


class _OutputSpec:
    """An output as the scenario gives it, for its kind's parse (harness/outputs/kind.py's OutputSpec)."""

    def __init__(self, name: str, raw: dict, kind: OutputKind, written: dict[str, str], apps: set[str], known):
        self.name, self.path = name, f"outputs.{name}"
        own = (Field(OWN_KIND, str, None, "package.module:KIND"),) if OWN_KIND in raw else ()
        self.values = Section(self.path, (*kind.fields, *own, OUTPUT_SOURCES)).read(raw)
        self.written, self.apps = written, apps
        self.record, self.folder = known.record, known.folder

    def identity(self) -> dict:
        identity = self.values["identity"]
        if identity is None:
            raise BlueprintError(f"{self.path}.identity", "required field is missing")
        problem = identity_problem(identity)
        if problem:
            raise BlueprintError(f"{self.path}.identity", problem)
        return dict(identity)

    def writer(self) -> str:
        apps = self.apps
        writer = self.values["written_by"] or (next(iter(apps)) if len(apps) == 1 else None)
        if writer not in apps:
            raise BlueprintError(
                f"{self.path}.written_by", f"expected the application writing it ({', '.join(apps)}), got {writer!r}"
            )
        return writer

    def receives(self) -> str | None:
        return _declared_filter(self.values["receives"], self.record, f"{self.path}.receives")

    def nested(self, key: str, fields: tuple[Field, ...]) -> dict | None:
        raw = self.values
        for part in key.split("."):  # aggregate.window: inside a mapping of its own fields
            raw = raw.get(part) if isinstance(raw, dict) else None
        return None if raw is None else Section(f"{self.path}.{key}", fields).read(raw)

    def error(self, where: str, why: str) -> BlueprintError:
        return BlueprintError(f"{self.path}.{where}", why)


def _output_kind(name: str, raw: Any) -> OutputKind:
    """The kind of output `name`: of the family its marking field names (topic, table, format), the one its variant
    setting names (database, format), or the family's default."""
    path = f"outputs.{name}"
    if not isinstance(raw, dict):
        raise BlueprintError(path, f"expected a mapping, got {type(raw).__name__}")
    if OWN_KIND in raw:
        try:
            return load_output_kind(Fields(raw, path, set(raw)).get(OWN_KIND, str))
        except OutputKindError as exc:
            raise BlueprintError(f"{path}.{OWN_KIND}", str(exc)) from None
    kinds = list(builtin_output_kinds().values())
    family = [k for k in kinds if k.marker in raw]
    if not family:
        markers = ", ".join(dict.fromkeys(k.marker for k in kinds))
        raise BlueprintError(path, f"expected one of the fields {markers}: what the job writes")
    if family[0].variant is None:
        return family[0]
    key = family[0].variant[0]
    if key not in raw:
        default = next((k for k in family if k.default_variant), None)
        if default is None:
            raise BlueprintError(f"{path}.{key}", "required field is missing")
        return default
    choices = {k.variant[1]: k for k in family}
    value = Fields(raw, path, set(raw)).get(key, str)
    if value not in choices:
        raise BlueprintError(f"{path}.{key}", f"expected one of {', '.join(sorted(choices))}, got {value!r}")
    return choices[value]


def _output(
    name: str, raw: dict, kind: OutputKind, written: dict[str, str], apps: set[str], known: Known
) -> StreamletInstance:
    """An output of its kind (a Kafka topic, a table, a table of files); any may say which records the job sends it
    (`receives`: a dead-letter output, one of a fan-out), the others dropped by design."""
    spec = _OutputSpec(name, raw, kind, written, apps, known)
    settings = kind.parse(spec)
    if spec.values["sources"] is not None:
        settings["sources"] = _strings(spec.values["sources"], f"outputs.{name}.sources", "source topic names")
    if OWN_KIND in raw:  # the runner finds a kind of one's own by its name
        settings[OWN_KIND] = raw[OWN_KIND]
    inlets = [settings["topic"]] if settings.get("topic") else []  # what it reads: the topic an application writes
    cls = _streamlet_class(Output, name, inlets, [])
    cls.kind, cls.egress_evidence = kind.family, kind.evidence(settings)
    return StreamletInstance(name, kind.family, cls, settings)


def _mapping(raw: Any, path: str, empty: str | None = None) -> dict:
    found = Fields(raw if raw is not None else {}, path, set(raw) if isinstance(raw, dict) else set()).raw
    if not found and empty:
        raise BlueprintError(path, empty)
    return found


# What pipeline.json keeps of an application's fields (with its trigger and the window it writes), and the runner reads.
SETTINGS = (
    *("command", "entry", "settings", "env", "cwd", "keeps", "deduplicates", "joins", "schedule"),
    *("world", "packages", "requirements"),
)


def _check_judged(apps: dict, streamlets: dict[str, StreamletInstance], readers: dict, written: dict) -> None:
    """Every application writes what is judged, and every topic written is read."""
    for name, app in apps.items():
        if not app["writes"] and not any(o.settings.get("written_by") == name for o in streamlets.values()):
            raise BlueprintError(
                f"applications.{name}", "writes no topic, and no output names it (written_by): nothing to judge"
            )
    for topic, inlets in readers.items():
        if not inlets:
            raise BlueprintError(
                f"applications.{written[topic]}.writes",
                f"nothing reads {topic!r}: name it in an output (where the run is judged) or an application's reads",
            )


def _check_sources_read(source_names: list[str], streamlets: dict[str, StreamletInstance], written: dict) -> None:
    """Every source topic is read by an application, and an output's `sources` are ones its writer reads."""
    for name, inst in streamlets.items():
        writer = streamlets.get(inst.settings.get("written_by") or written.get(inst.settings.get("topic")))
        read = getattr(writer.cls, "sources_read", ()) if writer else ()
        for topic in inst.settings.get("sources") or () if inst.kind in OUTPUT_KINDS else ():
            if topic not in read:
                raise BlueprintError(
                    f"outputs.{name}.sources", f"{topic!r} is not a source topic its writer reads ({', '.join(read)})"
                )
    unread = [t for t in source_names if not any(t in getattr(i.cls, "sources_read", ()) for i in streamlets.values())]
    if unread:
        raise BlueprintError("applications", f"no application reads the workload's source topic {unread[0]!r}")


def parse_applications(
    raw_apps: Any,
    raw_outputs: Any,
    raw_topics: Any,
    sources: tuple[TopicSpec, ...],
    folder: Path | None,
    store: bool,
    record: dict | None,
    secured: bool = False,
    certificate: bool = False,
) -> Blueprint:
    """The pipeline of the `applications`, `outputs` and `topics` sections: applications chained by the topics they
    read and write (the workload's source topics first, its own first of them), and the outputs they are judged at
    (`store`: the scenario has a PostgreSQL store, where table outputs live)."""
    apps_raw = _mapping(raw_apps, "applications", "no applications")
    outputs_raw = _mapping(
        raw_outputs, "outputs", "no outputs: name at least one topic or table an application writes, and its identity"
    )
    topics_raw = _mapping(raw_topics, "topics")
    written = _written(apps_raw, sources)
    source_names = [source.name for source in sources]
    kinds = {name: _output_kind(name, raw) for name, raw in outputs_raw.items()}
    for kind in kinds.values():
        if kind.needs_store and not store:
            raise BlueprintError("store", kind.needs_store)
    offered: dict[str, set[str]] = {}
    for name, kind in kinds.items():
        for prefix, value in kind.offers(name, outputs_raw[name]).items():
            offered.setdefault(prefix, set()).add(value)
    own_kind = any(OWN_KIND in raw for raw in outputs_raw.values() if isinstance(raw, dict))
    known = Known({*source_names, *written}, offered, store, record, folder, own_kind, secured, certificate)
    apps = {name: _application(name, raw, known, folder) for name, raw in apps_raw.items()}
    readers: dict[str, list[tuple[str, str]]] = {t: [] for t in written}
    outputs = {}
    for name, raw in outputs_raw.items():
        if name in apps:
            raise BlueprintError(f"outputs.{name}", f"{name!r} is also an application's name")
        outputs[name] = _output(name, raw, kinds[name], written, set(apps), known)
        _needs_in_code(name, kinds[name], apps.get(outputs[name].settings.get("written_by")))
        topic = outputs[name].settings.get("topic")
        if topic:
            readers[topic].append((name, topic))
    for ref in topics_raw:
        if ref not in written:
            raise BlueprintError(f"topics.{ref}", f"no application writes {ref!r} (written: {', '.join(written)})")
    windows = {o.settings["written_by"]: o.settings["window"] for o in outputs.values() if o.settings.get("window")}
    windows |= {_writer(o, written): window for o in outputs.values() if (window := appended_window(o.settings))}
    streamlets: dict[str, StreamletInstance] = {}
    for name, app in apps.items():
        for topic in app["reads"]:
            if topic not in source_names and topic not in written:
                fed = ", ".join(repr(t) for t in source_names)
                raise BlueprintError(
                    f"applications.{name}.reads", f"no topic {topic!r} (a source: {fed}; or one written)"
                )
        inlets = [t for t in app["reads"] if t not in source_names]
        readers.update({t: readers[t] + [(name, t)] for t in inlets})
        sources_read = tuple(t for t in source_names if t in app["reads"])
        cls = _streamlet_class(Application, name, inlets, list(app["writes"]), sources_read)
        # A job gets the jars its outputs' kinds need (Delta's) from the harness, as it gets the Kafka connector
        # (never --packages).
        writes = [o for o in outputs if outputs[o].settings.get("written_by") == name]
        cls.spark_jars = tuple(dict.fromkeys(jar_set for o in writes for jar_set in kinds[o].jar_sets))
        settings = {k: app[k] for k in SETTINGS}
        settings["trigger"] = app["trigger"]
        settings["window"] = windows.get(name)  # the windowed count it writes (the checker's counter)
        streamlets[name] = StreamletInstance(name, APPLICATION, cls, settings)
    streamlets.update(outputs)
    _check_judged(apps, streamlets, readers, written)
    _check_sources_read(source_names, streamlets, written)
    specs = {t: topic_spec(topics_raw.get(t), t, f"topics.{t}") for t in written}
    blueprint = Blueprint(streamlets, tuple(Connection((written[t], t), tuple(readers[t]), specs[t]) for t in written))
    topological_order(blueprint, "applications")
    return blueprint
