"""Starting an application (a team's own job) unchanged: its command with the placeholders filled in, the Kafka
connector given to its Spark without touching its code or its settings; and noticing it checkpoints elsewhere.

The connector goes on the driver's and the executors' class path (spark.driver/executor.extraClassPath), never
through spark.jars or --jars, which would replace the jars a job sets in code. Under `python` the options reach
Spark in PYSPARK_SUBMIT_ARGS (merged with one the job's environment already has, which must end in pyspark-shell);
under `spark-submit` they come before the job's own options, which therefore win.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import time
from pathlib import Path
from typing import TYPE_CHECKING

from contract import scratch as scratch_folder
from contract.applications import APPLICATION
from contract.egress import MAIN_QUERY
from harness import jars
from harness.cluster.access import KafkaAccess
from harness.errors import HarnessError
from harness.evidence.layout import WAREHOUSE
from harness.jit import jit_options
from harness.outputs.tables import jdbc_url, schema_name
from harness.process import ManagedProcess, free_ports
from harness.runner.world import in_world, run_setup
from harness.scenario.job_code import packages_named
from harness.scenario.placeholders import KAFKA, fill
from harness.secrets import split_password
from harness.spark import packages, versions
from harness.spark.launcher import driver_env
from harness.spark.session import DRIVER_JIT, GC_OPTIONS, LOGGING_OPTIONS, check_connector_version
from harness.spark.standalone import APPLICATION_TAG, executor_conf
from harness.spark.versions import SparkRuntime

if TYPE_CHECKING:
    from harness.runner.run_parts import ApplicationRun

SUBMIT_ARGS = "PYSPARK_SUBMIT_ARGS"
SHELL = "pyspark-shell"


def connector_options(runtime: SparkRuntime, scratch: Path, home: Path, jar_sets: tuple[str, ...] = ()) -> list[str]:
    """spark-submit options putting the drivers' Spark's Kafka connector (and the jar sets the job's outputs need:
    Delta's) on the driver's and executors' class path, the driver JVM's collector and JIT flags the harness's
    own drivers use (harness/spark/session.py: several drivers share two cores; the flags change how fast the JVM
    runs, never what the job does) and their logging (Spark's WARN, each Kafka producer's settings), its scratch
    space in `scratch` (spark.local.dir and java.io.tmpdir), and what Spark would otherwise leave in the job's
    folder in `home`, kept across its restarts: its warehouse (spark-warehouse) and its Derby metastore
    (metastore_db, derby.log); a job's own settings still win."""
    paths = [p for pom in (versions.CONNECTOR, *jar_sets) for p in jars.jar_set(runtime.jars(pom))]
    classpath = ":".join(str(p) for p in paths)
    return [
        "--conf",
        f"spark.driver.extraClassPath={classpath}",
        "--conf",
        f"spark.executor.extraClassPath={classpath}",
        # A killed driver cannot remove its block manager's and its context's folders: in /tmp they would pile up
        # over a night of kills; here they are measured with the run and cleared at the application's next start.
        "--conf",
        f"spark.local.dir={scratch}",
        "--conf",
        f"spark.sql.warehouse.dir={home / WAREHOUSE}",
        "--driver-java-options",
        " ".join(
            [
                *GC_OPTIONS,
                *jit_options(DRIVER_JIT),
                *LOGGING_OPTIONS,
                f'"-Djava.io.tmpdir={scratch}"',
                f'"-Dderby.system.home={home}"',
            ]
        ),
    ]


def cluster_options(master: str, app_name: str, cwd: str, runtime: SparkRuntime) -> list[str]:
    """spark-submit options running the job on the harness's standalone cluster: its master, its executor
    (standalone.executor_conf), Python workers on the drivers' interpreter importing from the job's
    folder, and its executors tagged with the harness's name for it (HARNESS_APPLICATION in their environment), by
    which executor faults find them whatever name the job gives itself."""
    conf = {
        **executor_conf(),
        "spark.pyspark.python": runtime.python,
        "spark.executorEnv.PYTHONPATH": cwd,
        "spark.executorEnv.PYTHONDONTWRITEBYTECODE": "1",  # no __pycache__ in the job's folder
        f"spark.executorEnv.{APPLICATION_TAG}": app_name,
    }
    return ["--master", master, "--name", app_name, *(x for k, v in conf.items() for x in ("--conf", f"{k}={v}"))]


def package_options(names: tuple[str, ...], give: bool, scratch: Path) -> list[str]:
    """spark-submit options resolving the packages a job asks for offline (served as the run began:
    harness/runner/spark_service.py): Spark's Ivy pointed at the harness's repositories, its cache in the job's
    scratch; `give`, spark.jars.packages too. Under `python` a job whose builder names its packages passes them
    itself (its list would replace the harness's); under spark-submit Spark would ignore it (the JVM is up), and
    a job naming none has them from the scenario alone: so they are given."""
    if not names:
        return []
    settings = packages.ivy_settings()
    options = ["--conf", f"spark.jars.ivySettings={settings}", "--conf", f"spark.jars.ivy={scratch / 'ivy'}"]
    return options + (["--conf", f"spark.jars.packages={','.join(names)}"] if give else [])


def application_command(
    command: list[str],
    env: dict[str, str],
    runtime: SparkRuntime,
    scratch: Path,
    home: Path,
    jar_sets: tuple[str, ...] = (),
    cluster: list[str] | None = None,
    names: tuple[str, ...] = (),
    builder_packages: bool = True,
) -> tuple[list[str], dict[str, str]]:
    """The argv and the environment additions that start `command` (placeholders already filled) on `runtime`'s
    Spark: `python` is the drivers' interpreter (its pyspark matches the connector), `spark-submit` is its Spark's;
    `scratch` and `home`: connector_options'; `cluster`: the options that run it on the harness's standalone
    cluster (cluster_options); `names`: the packages it asks Spark for (package_options), `builder_packages`: its
    code's builder names them (spark.jars.packages)."""
    submit = command[0] == "spark-submit"
    options = [
        *connector_options(runtime, scratch, home, jar_sets),
        *(cluster or []),
        *package_options(names, submit or not builder_packages, scratch),
    ]
    bin_dir = Path(runtime.python).parent
    if submit:
        return [str(bin_dir / "spark-submit"), *options, *command[1:]], dict(env)
    theirs = env.get(SUBMIT_ARGS, os.environ.get(SUBMIT_ARGS, "")).split()
    if theirs and theirs[-1] != SHELL:
        raise HarnessError(f"{SUBMIT_ARGS} of the application must end in {SHELL}, got {' '.join(theirs)!r}")
    merged = [*options, *theirs[:-1], SHELL]
    return [runtime.python, *command[1:]], {**env, SUBMIT_ARGS: shlex.join(merged)}


def placeholder_values(run: ApplicationRun, name: str) -> dict[str, str]:
    """What an application's command and environment get for each placeholder (harness/scenario/applications.py)."""
    scratch = run.layout.workdir(name)
    scratch.mkdir(parents=True, exist_ok=True)
    topics = {f"topic.{t.name}": run.topic_name(t) for t in run.all_topics()}
    outputs = {key: value for sink in run.sinks.values() for key, value in sink.placeholders().items()}
    url, schema = run.scenario.store_url, schema_name(run.run_id)
    store = (
        {"store.url": split_password(url)[0], "store.schema": schema, "store.jdbc": jdbc_url(url, schema)}
        if url
        else {}
    )
    access = run.client_access(name)
    return {
        "bootstrap": access.bootstrap_servers,
        "checkpoint": str(run.layout.checkpoints(name) / MAIN_QUERY),
        "checkpoints": str(run.layout.checkpoints(name)),
        "scratch": str(scratch),
        "ui_port": str(free_ports(1)[0]),
        "starting_offsets": (run.source_overrides.get(name) or run.source_options(name)).starting_offsets,
        "topic_prefix": _topic_prefix(run),
        **topics,
        **outputs,
        **store,
        **({"registry": run.registry.url} if run.registry.wanted else {}),
        **_kafka_values(access),
    }


def _topic_prefix(run: ApplicationRun) -> str:
    """What every real topic name of the run begins with (its namespace on a cluster one runs), as a regular
    expression: a subscribePattern's start."""
    spec = run.scenario.workload.topic
    return re.escape(run.topic_name(spec).removesuffix(spec.name))


def _kafka_values(access: KafkaAccess) -> dict[str, str]:
    """A secured cluster's ${kafka.*}: how the job's own kafka.* options reach it (the password for its env)."""
    sec = access.security
    if sec.protocol == "PLAINTEXT":
        return {}
    given = {
        "security_protocol": sec.protocol,
        "sasl_mechanism": sec.sasl_mechanism,
        "username": sec.username,
        "ca_file": sec.ca_file,
        "keystore_file": sec.keystore_file,
        "password": access.password,
    }
    return {f"{KAFKA}.{key}": value or "" for key, value in given.items()}


def start_application(run: ApplicationRun, name: str) -> ManagedProcess:
    """An application's driver: its own command, unchanged, on the drivers' Spark (runner/applications.py)."""
    settings = run.scenario.blueprint.streamlets[name].settings
    check_connector_version(run.prepare_spark())  # the job's pyspark and the connector put on its class path
    values = placeholder_values(run, name)
    command = [fill(arg, values) for arg in settings["command"]]
    if settings["entry"]:  # module:function, called by pipelines/entry.py with a SparkSession and its settings
        entry = run.layout.driver_settings(f"{name}.entry")
        entry.parent.mkdir(parents=True, exist_ok=True)
        filled = {k: fill(v, values) if isinstance(v, str) else v for k, v in settings["settings"].items()}
        entry.write_text(json.dumps({"name": name, "entry": settings["entry"], "settings": filled}, indent=2))
        command = ["python", "-m", "pipelines.entry", str(entry)]
    run.job_folders.note(name, Path(settings["cwd"]))
    scratch = run.layout.spark_local(name)
    scratch_folder.clear(scratch)  # what a killed predecessor left, not what a zombie beside this one uses
    own = (settings["world"] or {}).get("master")  # a master its code names, started in its world (runner/world.py)
    master = run.spark_master() or (f"spark://{own}" if own else None)
    argv, env = application_command(
        command,
        {key: fill(value, values) for key, value in settings["env"].items()},
        run.prepare_spark(),
        scratch,
        run.layout.workdir(name),
        run.scenario.blueprint.streamlets[name].cls.spark_jars,
        cluster_options(master, run.app_name(name), settings["cwd"], run.prepare_spark()) if master else None,
        tuple(settings.get("packages") or ()),
        builder_packages=bool(packages_named(settings)),
    )
    path = run.layout.driver_settings(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"name": name, "argv": argv, "env": sorted(env), "cwd": settings["cwd"]}, indent=2))
    env = driver_env({**run.driver_env(), **env}, run.prepare_spark().python)
    own = run.job_requirements(name)
    if own is not None:  # the job's own requirements first, then what the harness gives every driver
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(own), env.get("PYTHONPATH")]))
    if settings["world"]:  # the job's own addresses and paths reach the run's, in namespaces of its own
        run_setup(run, name, values, env, run.prepare_spark().python)
        argv = in_world(run, name, values, argv, "driver")
    proc = run.supervisor.start(
        f"streamlet-{name}", argv, run.layout.log(f"streamlet-{name}"), env=env, cwd=settings["cwd"]
    )
    run.progress[name].driver_started(proc.pid, time.time())
    return proc


def misplaced_checkpoint(run: ApplicationRun) -> str | None:
    """An application whose query checkpoints in its scratch folder rather than in ${checkpoint}: why, or None."""
    for name, inst in run.scenario.blueprint.streamlets.items():
        if inst.kind != APPLICATION:
            continue
        stray = next((p.parent for p in run.layout.workdir(name).rglob("offsets") if p.is_dir()), None)
        if stray is not None:
            return (
                f"applications.{name}: its checkpoint is {stray}, not the ${{checkpoint}} it is given "
                f"({run.layout.checkpoints(name) / MAIN_QUERY}), where the harness follows its batches"
            )
    return None
