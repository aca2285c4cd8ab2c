"""Scenario files (YAML): blueprint, workload, egress store, cluster, faults and expectations.

Every problem is reported as `FILE: field.path: what was expected`, before
anything starts. Unknown fields are errors.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contract.applications import APPLICATION, REAL_TIME
from contract.identity import DEFAULT_FORMAT, FORMAT, ID, SEQ
from contract.plugins import PluginError
from harness.evidence.recording_forms import JSON_LINES
from harness.faults.kind import GENERATOR
from harness.faults.kinds.late_events import KIND as LATE_EVENTS
from harness.scenario.applications import declared_filters, own_master, parse_applications
from harness.scenario.blueprint import Blueprint, StreamletInstance, TopicSpec, parse_blueprint
from harness.scenario.brokers import kafka_brokers
from harness.scenario.declared import (
    CANARY_TIMEOUT_S,
    CLUSTER,
    DOCKER,
    EVIDENCE,
    MAX_RECORDS,
    PREFLIGHT,
    SCENARIO,
    SOURCE,
    SOURCE_OPTIONS,
    SPARK,
    TOPIC,
    TRANSACTIONS,
    WORKLOAD,
)
from harness.scenario.expectations import parse_expectations
from harness.scenario.explore_spec import ExploreSpec, parse_explore
from harness.scenario.fault_rules import FaultRule, parse_faults, unplayable
from harness.scenario.fields import BlueprintError
from harness.scenario.kafka import KafkaClientSpec, parse_kafka, saved_kafka
from harness.scenario.partners import PartnerSpec, read_partner
from harness.scenario.source import ScenarioError, read_tree
from harness.scenario.storm_spec import StormSpec, parse_storm
from harness.secrets import redacted
from harness.spark import lines, packages, versions
from harness.workload.template import TemplateError, parse_template
from pipelines.kinds import add_import_paths
from pipelines.settings import SourceOptions


@dataclass(frozen=True)
class ClusterSpec:
    brokers: int = 1
    bootstrap_servers: str | None = None  # an external cluster; None: start an embedded one
    spark_master: str = (
        "local"  # local (each driver runs local[1]), standalone (started here), or spark:// / k8s:// of one's own
    )
    spark_workers: int = 0  # standalone: how many workers the harness starts
    spark_version: str | None = None  # the drivers' Spark (None: the harness's own pyspark; harness/spark/versions.py)
    docker: bool = False  # the brokers the harness starts run as containers (harness.docker)
    docker_image: str | None = None  # their image (None: the harness's own, built when missing)
    containers: tuple[str, ...] = ()  # a cluster one runs: its broker containers, broker-1... in this order
    security: str | None = None  # the embedded cluster's: sasl_ssl or ssl (harness.cluster.security); None: plaintext
    kafka_version: str | None = None  # the embedded brokers' Kafka (None: the harness's own; harness.cluster.releases)
    kafka_features: dict = field(default_factory=dict)  # feature -> level the embedded cluster is formatted with

    @property
    def faultable_brokers(self) -> int:
        """How many brokers broker faults can target: the harness's, or the containers listed of one's own."""
        return len(self.containers) if self.bootstrap_servers else self.brokers

    @property
    def spark_standalone(self) -> bool:
        return self.spark_master == "standalone"


@dataclass(frozen=True)
class SourceSpec:
    """One source topic the workload feeds: its own keys, rate and records (None: the harness's own)."""

    topic: TopicSpec
    keys: int
    rate: float  # a partner topic's: the rate of the records it answers, less its missing share
    record: dict | None = None
    partner: PartnerSpec | None = None  # each of its records answers one of another source topic's


@dataclass(frozen=True)
class WorkloadSpec:
    topic: TopicSpec
    keys: int = 8
    rate: float = 200.0
    duration_s: float = 30.0
    after_faults_s: float | None = None  # set: the workload also lasts until this long after the last fault ended
    payload_bytes: int = 64
    idempotence: bool = True
    acks: str = "all"  # the generator's producer: all, or 1 (a leader's own write)
    seed: int = 1
    headers: bool = False  # every record carries the trace header (harness.workload.generator_settings.TRACE_HEADER)
    transaction_records: int = 0  # > 0: the generator writes in transactions of this many records
    abort_every: int = 0  # > 0: every n-th transaction is aborted and its records written again in the next
    record: dict | None = None  # the records in the application's own format (harness/workload/template.py)
    workers: int = 1  # generator processes sharing the workload (harness/workload/workers.py)
    sources: tuple[SourceSpec, ...] = ()  # more source topics, fed beside `topic` (workload.sources)

    @property
    def fed(self) -> tuple[SourceSpec, ...]:
        """Every source topic the workload feeds: its own first, then `sources`."""
        return (SourceSpec(self.topic, self.keys, self.rate, self.record), *self.sources)

    @property
    def total_rate(self) -> float:
        """Records per second over every source topic."""
        return sum(source.rate for source in self.fed)

    @property
    def drawn_rate(self) -> float:
        """Records per second over the source topics that draw their own (a partner topic's answer them)."""
        return sum(source.rate for source in self.fed if source.partner is None)

    def read_by(self, streamlet: StreamletInstance) -> tuple[TopicSpec, ...]:
        """The source topics `streamlet` reads: an application's by its `reads`, any other ingress the first."""
        if not streamlet.cls.reads_source:
            return ()
        names = getattr(streamlet.cls, "sources_read", ()) or (self.topic.name,)
        return tuple(source.topic for source in self.fed if source.topic.name in names)


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    blueprint: Blueprint
    workload: WorkloadSpec
    cluster: ClusterSpec = field(default_factory=ClusterSpec)
    store_url: str | None = None
    source_options: dict[str, SourceOptions] = field(default_factory=dict)  # per streamlet
    faults: tuple[FaultRule, ...] = ()
    expectations: dict = field(default_factory=dict)  # name -> value (harness/checker/expectations/kinds/)
    checks: tuple[str, ...] = ()  # its own checks: package.module:NAME, each a Step (harness/checker/own_checks.py)
    raw: dict = field(default_factory=dict)  # the parsed file, for the run directory
    import_paths: tuple[str, ...] = ()  # where user streamlets are imported from (absolute folders)
    kafka: KafkaClientSpec | None = None  # how clients speak to the brokers (None: plaintext)
    storm: StormSpec | None = None  # faults drawn from the seed when the run starts, besides `faults`
    explore: ExploreSpec | None = None  # the space `harness explore` draws schedules from (a run ignores it)
    canary_timeout_s: float | None = (
        CANARY_TIMEOUT_S  # applications: how long the preflight's canary may take (None: none)
    )
    recordings: str = JSON_LINES  # the evidence's form: json (CSV, JSON lines, audit tables) or columnar (segments)
    evidence_budget_bytes: int | None = None  # the run directory's evidence may take so much (None: unbounded)

    def options_for(self, streamlet: str) -> SourceOptions:
        return self.source_options.get(streamlet, SourceOptions())


def _topic(raw: dict, path: str = TOPIC.path) -> TopicSpec:
    t = TOPIC.read(raw, path)
    return TopicSpec(
        t["name"], t["partitions"], t["replication"], {str(k): str(v) for k, v in t["config"].items()}, t["codec"]
    )


def _sources(raw: list, first: TopicSpec, keys: int, record: dict | None, rate: float, folder: Path | None):
    """workload.sources: more source topics, each named apart from the others and the workload's own."""
    found, names = [], {first.name}
    drawn = {first.name: (keys, rate, record)}  # the topics drawing their own records: keys, rate, record template
    for i, item in enumerate(raw):
        path = f"workload.sources[{i}]"
        s = SOURCE.read(item, path)
        if not isinstance(s["topic"].get("name"), str):
            raise BlueprintError(f"{path}.topic.name", "required field is missing: each source topic is named")
        topic = _topic(s["topic"], f"{path}.topic")
        if topic.name in names:
            raise BlueprintError(f"{path}.topic.name", f"{topic.name!r} is fed already: each source topic once")
        names.add(topic.name)
        partner, declared = None, s["record"]
        if s["partner"] is not None:
            for given in ("keys", "rate"):
                if given in item:
                    raise BlueprintError(f"{path}.{given}", "a partner topic's are those of the topic it answers")
            answered = {name: template for name, (_, _, template) in drawn.items()}
            partner, declared = read_partner(s["partner"], f"{path}.partner", declared, answered)
        template = _record(declared, topic, folder, f"{path}.record")
        if template and template.get("registry"):
            raise BlueprintError(f"{path}.record.registry", "not yet for a further source (only workload.record)")
        if partner is None:
            drawn[topic.name] = (s["keys"], s["rate"], template)
            found.append(SourceSpec(topic, s["keys"], s["rate"], template))
        else:
            of_keys, of_rate, _ = drawn[partner.of]
            found.append(SourceSpec(topic, of_keys, of_rate * (1 - partner.missing), template, partner))
    return tuple(found)


def _workload(w: dict, folder: Path | None = None) -> WorkloadSpec:
    """The workload from its fields as declared (WORKLOAD.read)."""
    topic = _topic(w["topic"])
    record = _record(w["record"], topic, folder)
    spec = WorkloadSpec(
        topic=topic,
        keys=w["keys"],
        rate=w["rate"],
        duration_s=w["duration_s"],
        after_faults_s=w["after_faults_s"],
        payload_bytes=w["payload_bytes"],
        idempotence=w["idempotence"],
        acks=_acks(w["acks"], w["idempotence"]),
        seed=w["seed"],
        headers=w["headers"],
        **_transactions(w["transactions"], w["idempotence"]),
        record=record,
        workers=w["workers"],
        sources=_sources(w["sources"], topic, w["keys"], record, w["rate"], folder),
    )
    if spec.workers > spec.keys:
        raise BlueprintError("workload.workers", f"{spec.workers} workers for {spec.keys} keys: each needs a key")
    if spec.workers > 1 and spec.sources:
        raise BlueprintError("workload.workers", "not yet with several source topics (workload.sources): one worker")
    if spec.transaction_records and any(source.partner for source in spec.sources):
        raise BlueprintError("workload.transactions", "not yet with partner topics (workload.sources[N].partner)")
    if spec.total_rate * spec.duration_s > MAX_RECORDS:
        raise BlueprintError(
            "workload",
            f"rate x duration_s is {spec.total_rate * spec.duration_s:,.0f} records; at most "
            f"{MAX_RECORDS:,} can be checked in this machine's memory",
        )
    return spec


def _record(raw: dict | None, topic: TopicSpec, folder: Path | None, path: str = "workload.record") -> dict | None:
    """workload.record: a template of the application's own records (JSON values); a sample file's path starts
    at `folder`."""
    if raw is None:
        return None
    if topic.codec != "json":
        raise BlueprintError(path, f"templates write JSON; the source topic is {topic.codec}")
    try:
        return parse_template(raw, path, folder=folder)
    except TemplateError as exc:
        raise BlueprintError(exc.path, str(exc).split(": ", 1)[1]) from None


def _late_events(w: dict) -> tuple[FaultRule, ...]:
    """workload.late_share (late_by_s, late_after_s): the late-events fault written as a workload setting."""
    if w["late_share"] == 0:
        return ()
    params = {"share": w["late_share"], "late_by_s": w["late_by_s"], "after_s": w["late_after_s"]}
    return (FaultRule(LATE_EVENTS.name, GENERATOR, 0.0, params=params, fault=LATE_EVENTS),)


def _faults(
    raw: list, workload: dict, blueprint: Blueprint, cluster: ClusterSpec, duration_s: float
) -> tuple[FaultRule, ...]:
    """The faults section's rules, and the workload's late events (its fields as declared) as one more; a fault the
    workload's `duration_s` cannot hold is refused."""
    late = _late_events(workload)
    faults = tuple(parse_faults(raw, blueprint, cluster))
    cannot = unplayable(list(faults), duration_s)
    if cannot:
        raise BlueprintError(f"faults[{cannot[0]}]", f"{cannot[1]} (workload.duration_s): it would not be played")
    if late and any(r.fault is LATE_EVENTS for r in faults):
        raise BlueprintError("workload.late_share", "late events are given twice: here and as a late-events fault")
    return faults + late


def _check_own_masters(faults: tuple[FaultRule, ...], blueprint: Blueprint) -> None:
    """An executor fault on an application whose code sets its own Spark master is refused: its executors are not
    on the cluster the harness starts."""
    for i, rule in enumerate(faults):
        inst = blueprint.streamlets.get(rule.target)
        found = own_master(inst.settings) if inst is not None and inst.kind == APPLICATION else None
        if found and "spark-cluster" in (rule.fault.needs or ()):
            raise BlueprintError(
                f"faults[{i}].target",
                f"{rule.kind}: applications.{rule.target} sets its own Spark master in its code ({found}), so its "
                "executors are not on the cluster the harness starts: leave the master to spark-submit",
            )


def _acks(raw: int | str, idempotence: bool) -> str:
    acks = {"all": "all", "-1": "all", "1": "1"}.get(str(raw))
    if acks is None:
        raise BlueprintError("workload.acks", f"expected all or 1, got {raw!r}")
    if acks != "all" and idempotence:
        raise BlueprintError("workload.acks", "an idempotent producer writes with acks all; add idempotence: false")
    return acks


def _transactions(raw: dict | None, idempotence: bool) -> dict:
    """workload.transactions {records, abort_every}: a transactional producer upstream."""
    if raw is None:
        return {}
    t = TRANSACTIONS.read(raw)
    if not idempotence:
        raise BlueprintError(
            "workload.idempotence", "a transactional producer is idempotent; remove idempotence: false"
        )
    abort_every = t["abort_every"]
    if abort_every == 1:
        raise BlueprintError(
            "workload.transactions.abort_every",
            "1 would abort every transaction (and write its records again forever); use 0 (never) or 2 and up",
        )
    return {"transaction_records": t["records"], "abort_every": abort_every}


def _source_options(raw: Any, blueprint: Blueprint) -> dict[str, SourceOptions]:
    options = {}
    for name, body in (raw or {}).items():
        path = f"source_options.{name}"
        if name not in blueprint.streamlets:
            raise BlueprintError(path, f"unknown streamlet {name!r} (declared: {', '.join(blueprint.streamlets)})")
        options[name] = SourceOptions(**SOURCE_OPTIONS.read(body, path))
    return options


def _import_paths(raw: Any, folder: Path | None) -> tuple[str, ...]:
    """`imports`: folders user streamlets are imported from, relative to the scenario's folder (by default,
    that folder itself)."""
    if raw is None:
        return (str(folder.resolve()),) if folder is not None else ()
    if not isinstance(raw, list) or not all(isinstance(p, str) and p for p in raw):
        raise BlueprintError("imports", f"expected a list of folders, got {raw!r}")
    paths = []
    for i, entry in enumerate(raw):
        path = (folder or Path.cwd()) / entry
        if not path.is_dir():
            raise BlueprintError(f"imports[{i}]", f"no such folder: {path}")
        paths.append(str(path.resolve()))
    return tuple(paths)


def _docker(raw: dict | None, external: str | None) -> tuple[bool, str | None, tuple[str, ...]]:
    """`cluster.docker`: the brokers the harness starts as containers (`{}`, or `{image: TAG}`), or, with
    cluster.bootstrap_servers, the broker containers of a cluster one runs that broker faults may touch."""
    if raw is None:
        return False, None, ()
    d = DOCKER.read(raw)
    image, containers = d["image"], d["containers"]
    if external is None:
        if containers is not None:
            raise BlueprintError(
                "cluster.docker.containers",
                "only with cluster.bootstrap_servers (a cluster you run); "
                "without it the harness starts its own containers",
            )
        return True, image, ()
    if image is not None:
        raise BlueprintError(
            "cluster.docker.image", "the harness starts no broker on a cluster you run (cluster.bootstrap_servers)"
        )
    if (
        not containers
        or not all(isinstance(c, str) and c for c in containers)
        or len(set(containers)) != len(containers)
    ):
        raise BlueprintError(
            "cluster.docker.containers", f"expected the names of your broker containers, each once, got {containers!r}"
        )
    return False, None, tuple(containers)


def _check_jars_served(blueprint: Blueprint, spark: str) -> None:
    """Every jar set a streamlet or job needs (an output kind's) has a release built for the drivers' Spark."""
    for name, inst in blueprint.streamlets.items():
        for pom in inst.cls.spark_jars:
            why = lines.unserved(pom, spark)
            if why:
                raise BlueprintError("cluster.spark.version", f"{name} ({inst.kind}) needs {pom}, and {why}")


def _check_joins(blueprint: Blueprint, workload: WorkloadSpec) -> None:
    """Each application's `joins` names a partner topic answering a topic it reads, both read by it; its settings get
    what the checker needs of the answers (when they are sent: harness/checker/joins.py)."""
    partners = {source.topic.name: source.partner for source in workload.sources if source.partner}
    sources = {source.topic.name: source for source in workload.sources}
    for name, inst in blueprint.streamlets.items():
        joins = inst.settings.get("joins") if inst.kind == APPLICATION else None
        if not joins or "partner" not in joins:
            continue
        partner = partners.get(joins["partner"])
        if partner is None:
            known = ", ".join(partners) or "none"
            raise BlueprintError(
                f"applications.{name}.joins.partner",
                f"{joins['partner']!r} is not a partner topic (workload.sources[N].partner: {known})",
            )
        unread = [t for t in (partner.of, joins["partner"]) if t not in getattr(inst.cls, "sources_read", ())]
        if unread:
            raise BlueprintError(f"applications.{name}.joins", f"it does not read {unread[0]!r} (reads)")
        joins.update(of=partner.of, after_s=partner.after_s, late_by_s=partner.late_by_s)
        if joins.get("outer"):
            _check_outer(joins, (sources[joins["partner"]].record or {}).get("identity") or {})


def _check_outer(joins: dict, identity: dict) -> None:
    """A left outer join's padded rows are those whose `padded_by` is null, by default the partner's id; where it is
    the partner's composed id, a joined row's names its answer (partner_format: how, for the checker)."""
    joins["padded_by"] = joins.get("padded_by") or identity.get(ID) or identity.get(SEQ) or SEQ
    own = ID in identity and joins["padded_by"] == identity[ID]
    joins["partner_format"] = identity.get(FORMAT, DEFAULT_FORMAT) if own else None


def _check_real_time(blueprint: Blueprint, workload: WorkloadSpec, cluster: ClusterSpec) -> None:
    """Every real-time application (its `trigger`) runs on drivers whose Spark has Real-time Mode for its query, and,
    on the local master, with a task slot for each partition it reads."""
    spark = cluster.spark_version or versions.own_version()
    for name, inst in blueprint.streamlets.items():
        if inst.kind != APPLICATION or inst.settings.get("trigger") != REAL_TIME:
            continue
        stateful = "deduplicates" if inst.settings.get("deduplicates") else "window" if inst.settings["window"] else ""
        why = lines.real_time_unsupported(spark, bool(stateful))
        if why:  # a window is its output's: the job aggregates
            raise BlueprintError(f"applications.{name}.{stateful or 'trigger'}", why)
        if cluster.spark_master == "local" and not own_master(inst.settings):
            _check_task_slots(name, blueprint, workload)


def _check_packages(blueprint: Blueprint, cluster: ClusterSpec) -> None:
    """Every package a job asks Spark for runs on the drivers' Spark: none built for another Scala line (Spark's
    Kafka connector and Avro functions are the harness's own, whatever the job names: harness/spark/packages.py)."""
    spark = cluster.spark_version or versions.own_version()
    for name, inst in blueprint.streamlets.items():
        for text in inst.settings.get("packages") or () if inst.kind == APPLICATION else ():
            why = packages.refusal(packages.parse(text, name)[0], lines.line(spark).scala, spark)
            if why:
                raise BlueprintError(f"applications.{name}.packages", why)


def _own_checks(raw: list) -> dict:
    """`checks`: the scenario's own checks (package.module:NAME, from its import paths), each a Step."""
    if not raw:
        return {}
    from harness.checker.own_checks import load_check  # the checker's steps: imported only for a scenario naming one

    found = {}
    for i, spec in enumerate(raw):
        try:
            found[spec] = load_check(spec) if isinstance(spec, str) else None
        except PluginError as exc:
            raise BlueprintError(f"checks[{i}]", str(exc)) from None
        if found[spec] is None:
            raise BlueprintError(f"checks[{i}]", f"expected package.module:NAME, got {spec!r}")
    return found


def _check_worlds(blueprint: Blueprint, cluster: ClusterSpec) -> None:
    """A job in a world of its own runs on the harness's brokers, its executors in its driver (Spark's local
    master) or on the master its world gives it: the executors of the run's standalone cluster would have to reach
    a driver only its namespace can."""
    for name, inst in blueprint.streamlets.items():
        if not (inst.kind == APPLICATION and inst.settings.get("world")):
            continue
        if cluster.bootstrap_servers:
            raise BlueprintError(
                f"applications.{name}.world",
                "not yet on a cluster one runs (cluster.bootstrap_servers): its brokers advertise addresses the "
                "job's world has no relay for",
            )
        if cluster.spark_master != "local":
            raise BlueprintError(
                f"applications.{name}.world",
                f"not yet on the harness's standalone cluster (cluster.spark_master: {cluster.spark_master}): its "
                "executors could not reach a driver in a world of its own",
            )
        spark = cluster.spark_version or versions.own_version()
        if inst.settings["world"]["master"] and spark != versions.own_version():
            raise BlueprintError(
                f"applications.{name}.world.master",
                f"the master and worker started in a job's world run the harness's own Spark "
                f"({versions.own_version()}), not cluster.spark.version {spark}",
            )


def _check_task_slots(name: str, blueprint: Blueprint, workload: WorkloadSpec) -> None:
    """Real-time Mode runs every task of a batch at once, for as long as the batch: with fewer task slots than the
    partitions it reads, the others wait a whole interval and the job never catches up. An application on the
    local master (Spark's local[*]: a slot per core) reads at most as many partitions as there are cores."""
    inst = blueprint.streamlets[name]
    topics = list(workload.read_by(inst)) + list(blueprint.inputs_of(name).values())
    partitions, slots = sum(t.partitions for t in topics), len(os.sched_getaffinity(0))
    if partitions > slots:
        read = ", ".join(f"{t.name} {t.partitions}" for t in topics)
        raise BlueprintError(
            f"applications.{name}.trigger",
            f"Real-time Mode runs a task per partition at once: it reads {partitions} partitions ({read}) and "
            f"Spark's local master has {slots} task slots (one per core): read at most {slots}",
        )


def _spark(raw: dict) -> tuple[str, int, str | None]:
    """`cluster.spark`: where the drivers run their executors (master, and workers for a standalone cluster), and
    which Spark they run (version)."""
    s = SPARK.read(raw)
    master = s["master"]
    if master not in ("local", "standalone") and not master.startswith(("spark://", "k8s://")):
        raise BlueprintError(
            "cluster.spark.master", f"expected local, standalone, or a spark:// or k8s:// URL, got {master!r}"
        )
    version = s["version"]
    if version is not None:
        if version not in versions.known_versions():
            raise BlueprintError("cluster.spark.version", lines.unknown_version(version, versions.known_versions()))
        if master == "standalone" and version != versions.own_version():
            raise BlueprintError(
                "cluster.spark.version",
                f"the standalone cluster the harness starts runs its own Spark "
                f"({versions.own_version()}), not {version}",
            )
        version = None if version == versions.own_version() else version
    if master != "standalone":
        if "workers" in raw:
            raise BlueprintError("cluster.spark.workers", "only for master: standalone (a cluster the harness starts)")
        return master, 0, version
    return master, s["workers"], version


def _cluster(raw: dict) -> ClusterSpec:
    c = CLUSTER.read(raw)
    brokers, external, security = c["brokers"], c["bootstrap_servers"], c["security"]
    if brokers not in (1, 3):
        raise BlueprintError("cluster.brokers", f"expected 1 or 3, got {brokers}")
    if security and external:
        raise BlueprintError(
            "cluster.security",
            "secures the embedded cluster; for a cluster you run "
            "(cluster.bootstrap_servers), say how to reach it in the kafka: section",
        )
    version, features = kafka_brokers(c["kafka"], external)
    return ClusterSpec(
        brokers,
        external,
        *_spark(c["spark"]),
        *_docker(c["docker"], external),
        security=security,
        kafka_version=version,
        kafka_features=features,
    )


def parse_scenario(raw: Any, folder: Path | None = None) -> Scenario:
    """Validate a scenario's parsed YAML; `folder` is where its file is (relative import paths start there)."""
    top, given = SCENARIO.read(raw), set(raw)
    import_paths = _import_paths(top["imports"], folder)
    add_import_paths(import_paths)
    workload_fields = WORKLOAD.read(top["workload"])
    workload = _workload(workload_fields, folder)
    cluster = _cluster(top["cluster"])
    kafka = parse_kafka(top["kafka"], folder, cluster.bootstrap_servers is not None, cluster.security)
    secured = bool(cluster.security) or (kafka is not None and kafka.security_protocol != "PLAINTEXT")
    certificate = cluster.security == "ssl" or bool(kafka is not None and kafka.keystore_file)  # mutual TLS
    blueprint = _pipeline(top, given, workload, folder, (secured, certificate))
    store = top["store"]
    if store != "sqlite" and not store.startswith(("postgresql://", "postgres://")):
        raise BlueprintError("store", f"expected sqlite or a postgresql:// URL, got {redacted(store)!r}")
    _check_jars_served(blueprint, cluster.spark_version or versions.own_version())
    _check_real_time(blueprint, workload, cluster)
    _check_joins(blueprint, workload)
    _check_worlds(blueprint, cluster)
    _check_packages(blueprint, cluster)
    faults = _faults(top["faults"], workload_fields, blueprint, cluster, workload.duration_s)
    _check_own_masters(faults, blueprint)
    _check_source_faults(faults, blueprint, workload)
    checks = _own_checks(top["checks"])
    expectations = parse_expectations(top["expectations"], blueprint, workload.headers, checks)
    evidence = EVIDENCE.read(top["evidence"])
    return Scenario(
        name=top["name"],
        description=top["description"],
        blueprint=blueprint,
        workload=workload,
        cluster=cluster,
        store_url=None if store == "sqlite" else store,
        source_options=_source_options(top["source_options"], blueprint),
        faults=faults,
        expectations=expectations,
        checks=tuple(checks),
        raw=_saved(raw, store),
        import_paths=import_paths,
        kafka=kafka,
        storm=parse_storm(top["storm"]),
        explore=parse_explore(top["explore"]),
        canary_timeout_s=_preflight(top, given),
        recordings=evidence["recordings"],
        evidence_budget_bytes=evidence["budget"],
    )


def _check_source_faults(faults: tuple[FaultRule, ...], blueprint: Blueprint, workload: WorkloadSpec) -> None:
    """A fault on the topics of a job reading source topics is judged for a workload of one: its causes read the
    offsets of the first source topic alone."""
    if not workload.sources:
        return
    for i, rule in enumerate(faults):
        inst = blueprint.streamlets.get(rule.target)
        if rule.fault.on_topics and inst is not None and inst.cls.reads_source:
            raise BlueprintError(
                f"faults[{i}]",
                f"{rule.fault.name} on {rule.target}, a source topic's reader: not yet with several (workload.sources)",
            )


def _pipeline(
    top: dict, given: set, workload: WorkloadSpec, folder: Path | None, secured: tuple[bool, bool]
) -> Blueprint:
    """The streamlets of a `blueprint`, or the team's own `applications` with their `outputs` (and `topics`);
    `top`: the scenario's fields as declared, `given`: those the file gives, `secured`: whether the clients reach
    Kafka secured, and with a certificate of their own."""
    if "applications" not in given:
        if workload.sources:
            raise BlueprintError("workload.sources", "only with applications (a blueprint's ingress reads one topic)")
        for section in ("outputs", "topics"):
            if section in given:
                raise BlueprintError(section, "only with applications (a blueprint has blueprint.topics)")
        if top["blueprint"] is None:
            raise BlueprintError("scenario.blueprint", "required field is missing")
        return parse_blueprint(top["blueprint"])
    if "blueprint" in given:
        raise BlueprintError("applications", "give a blueprint or applications, not both")
    for section in ("source_options", "imports"):
        if section in given:
            raise BlueprintError(section, "not for applications: an application reads and imports as its code says")
    store = top["store"].startswith(("postgresql://", "postgres://"))
    topics = tuple(source.topic for source in workload.fed)
    blueprint = parse_applications(
        top["applications"], top["outputs"], top["topics"], topics, folder, store, workload.record, *secured
    )
    filters = declared_filters(blueprint)
    if workload.sources and filters:
        name = next(iter(filters))
        raise BlueprintError(
            f"applications.{name}" if name in top["applications"] else f"outputs.{name}",
            "a declared filter (keeps, receives) is not yet for several source topics (workload.sources)",
        )
    return blueprint


def _preflight(top: dict, given: set) -> float | None:
    """`preflight: {canary, canary_timeout_s}`: a run of applications' canary record (harness/runner/preflight.py)."""
    raw = top["preflight"]
    if raw is None:
        return CANARY_TIMEOUT_S
    if "applications" not in given:
        raise BlueprintError("preflight", "only with applications (a blueprint's streamlets are the harness's own)")
    p = PREFLIGHT.read(raw)
    return p["canary_timeout_s"] if p["canary"] else None


def _saved(raw: dict, store: str) -> dict:
    """The scenario as it is saved with the run: no password in it."""
    saved = {**raw, "store": redacted(store)} if "store" in raw else dict(raw)
    if "kafka" in saved:
        saved["kafka"] = saved_kafka(saved["kafka"])
    return saved


def load_scenario(path: Path, bootstrap_servers: str | None = None) -> Scenario:
    """Read and validate a scenario file; every error names the file and the field. `bootstrap_servers` points it
    at a cluster one runs (cluster.bootstrap_servers), whatever cluster it describes."""
    path = Path(path)
    raw = read_tree(path)
    if bootstrap_servers and isinstance(raw, dict):
        own = raw.get("cluster") if isinstance(raw.get("cluster"), dict) else {}
        kept = {k: v for k, v in own.items() if k not in ("brokers", "security")}  # both describe the embedded cluster
        raw = {**raw, "cluster": {**kept, "bootstrap_servers": bootstrap_servers}}
    try:
        return parse_scenario(raw, path.parent)
    except BlueprintError as exc:
        raise ScenarioError(f"{path}: {exc}") from None
