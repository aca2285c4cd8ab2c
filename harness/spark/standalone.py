"""A Spark standalone cluster from the pyspark installation: a master and N workers, each a JVM under a
Supervisor, on free loopback ports, logs in the run directory.

The drivers connect to `master_url`; each application gets its executors in JVMs the workers start (children
of a worker, in its session). Their state is read from the master's and the workers' JSON status pages.
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from harness import jars
from harness.errors import HarnessError
from harness.jit import QUICK, jit_options
from harness.process import ManagedProcess, Supervisor, free_ports
from harness.process.supervisor import session_members
from harness.spark import versions
from harness.spark.session import DRIVER_JIT, GC_OPTIONS
from harness.waiting import wait_for

# An executor of a team's job carries the harness's name for the job in its environment (spark.executorEnv): the
# job names its Spark application as its code says, so this is how its executors are found.
APPLICATION_TAG = "HARNESS_APPLICATION"
EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
REGISTERED = "Successfully registered with master"  # what a worker logs once its master has it
WORKER_CORES = 8  # slots, not CPUs: one executor of one core per streamlet application fits on any worker
WORKER_MEMORY = "6g"
# How long the master and a worker may take to start and register (a deadline, not a wait): JVMs start slowly
# on a busy machine.
READY_TIMEOUT_S = 180.0
EXECUTOR_LOG = "{worker}/{app}/{executor}/stderr"  # where a worker keeps an executor's stderr, in its work folder
TASK_LINE = re.compile(rb"(Running|Finished|Exception in) task \d+\.(\d+) in stage \S+ \(TID (\d+)\)")
# The master and the workers run with the serial collector and C1 only, like the drivers (harness/spark/session.py):
# they share two cores with the drivers, and what they run is not hot enough for C2 to repay its compilations.
DAEMON_JVM_OPTIONS = [*GC_OPTIONS, *QUICK]


def executor_conf() -> dict[str, str]:
    """What an application asks of this cluster: one executor of one core, small (several drivers share two cores),
    in a JVM with the drivers' collector and JIT (they change how fast it runs, never what the job does)."""
    return {
        "spark.cores.max": "1",
        "spark.executor.cores": "1",
        "spark.executor.memory": "512m",
        "spark.executor.extraJavaOptions": " ".join([*GC_OPTIONS, *jit_options(DRIVER_JIT)]),
        "spark.task.maxFailures": "4",
    }


def in_a_world(workdir: Path, master: str) -> dict:
    """A master at `master` (host:port, the job's own name for it) and one worker, to run in a job's world
    (harness/world/enter.py) before the job: their commands, logs and environment, and the line the worker logs
    once it is ready. In a network namespace of its own every port is free: the others are the kernel's pick."""
    host, _, port = master.rpartition(":")
    logs = workdir / "logs"
    return {
        "env": daemon_env(workdir, logs),
        "daemons": [
            {
                "argv": daemon_argv(MASTER_CLASS, ["--host", host, "--port", port, "--webui-port", "0"]),
                "log": str(logs / "spark-master.log"),
            },
            {
                "argv": daemon_argv(WORKER_CLASS, worker_args(0, 0, workdir / "worker", f"spark://{master}")),
                "log": str(logs / "spark-worker.log"),
                "ready": REGISTERED,
            },
        ],
        "timeout_s": READY_TIMEOUT_S,
    }


@dataclass(frozen=True)
class Executor:
    app_id: str
    executor_id: str
    worker: str
    pid: int | None  # the executor JVM, when it is one of this cluster's processes


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def daemon_argv(main: str, args: list[str], memory: str = "256m") -> list[str]:
    """The command of a master or a worker (`main`): a JVM on the pyspark installation's jars."""
    return [
        jars.java_executable(),
        f"-Xmx{memory}",
        *DAEMON_JVM_OPTIONS,
        "-cp",
        f"{spark_home() / 'jars'}/*",
        main,
        *args,
    ]


def daemon_env(workdir: Path, log_dir: Path) -> dict[str, str]:
    """What a master and a worker add to their environment. SPARK_HOME lets a worker build its executors' command
    (their classpath is SPARK_HOME/jars); SPARK_LOCAL_DIRS keeps the executors' scratch space in the run, even
    when one is killed, and so does java.io.tmpdir for every JVM of the cluster (the executors inherit the
    worker's environment): the native libraries an executor extracts there (lz4's, for the broadcasts) stay
    behind when it is killed."""
    tool_options = os.environ.get("JAVA_TOOL_OPTIONS", "")
    return {
        "SPARK_HOME": str(spark_home()),
        "SPARK_SCALA_VERSION": versions.runtime(None).scala,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOG_DIR": str(log_dir),
        "SPARK_LOCAL_DIRS": str(workdir / "local"),
        "JAVA_TOOL_OPTIONS": f'{tool_options} "-Djava.io.tmpdir={workdir / "tmp"}"'.strip(),  # quoted: a space
    }


def worker_args(port: int, ui: int, work: Path, master_url: str) -> list[str]:
    """A worker's arguments: its ports, its slots and memory, its work folder (its executors' logs), its master."""
    return [
        *("--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui)),
        *("--cores", str(WORKER_CORES), "--memory", WORKER_MEMORY, "--work-dir", str(work)),
        master_url,
    ]


class StandaloneCluster:
    def __init__(self, supervisor: Supervisor, workdir: Path, log_dir: Path, workers: int):
        self.supervisor, self.workdir, self.log_dir = supervisor, Path(workdir), Path(log_dir)
        ports = free_ports(2 + 2 * workers)
        self.master_port, self.master_ui = ports[0], ports[1]
        self.worker_ports = {
            f"worker-{i + 1}": (ports[2 + 2 * i], ports[3 + 2 * i]) for i in range(workers)
        }  # name -> (port, web UI)
        self.master: ManagedProcess | None = None
        self.worker_procs: dict[str, ManagedProcess] = {}

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.master_port}"

    def worker_names(self) -> list[str]:
        return list(self.worker_ports)

    def _env(self) -> dict[str, str]:
        return {**os.environ, **daemon_env(self.workdir, self.log_dir)}

    @property
    def scratch(self) -> Path:
        """The cluster's JVMs' java.io.tmpdir."""
        return self.workdir / "tmp"

    def start(self, timeout: float = READY_TIMEOUT_S) -> "StandaloneCluster":
        self.scratch.mkdir(parents=True, exist_ok=True)
        self.master = self.supervisor.start(
            "spark-master",
            daemon_argv(
                MASTER_CLASS,
                ["--host", "127.0.0.1", "--port", str(self.master_port), "--webui-port", str(self.master_ui)],
            ),
            self.log_dir / "spark-master.log",
            env=self._env(),
            cwd=self.workdir,
        )
        wait_for(
            lambda: (self.status() or {}).get("status") == "ALIVE",
            timeout=timeout,
            interval=0.3,
            what=f"the Spark master at {self.master_url}",
            abort=self._dead,
        )
        for name in self.worker_names():
            self.start_worker(name, wait=False)
        self.wait_workers(self.worker_names(), timeout)
        return self

    def start_worker(self, name: str, wait: bool = True, timeout: float = READY_TIMEOUT_S) -> ManagedProcess:
        port, ui = self.worker_ports[name]
        work = self.workdir / name
        work.mkdir(parents=True, exist_ok=True)
        proc = self.supervisor.start(
            f"spark-{name}",
            daemon_argv(WORKER_CLASS, worker_args(port, ui, work, self.master_url)),
            self.log_dir / f"spark-{name}.log",
            env=self._env(),
            cwd=work,
        )
        self.worker_procs[name] = proc
        if wait:
            self.wait_workers([name], timeout)
        return proc

    def wait_workers(self, names: list[str], timeout: float) -> None:
        ports = {self.worker_ports[n][0] for n in names}
        wait_for(
            lambda: ports <= self._alive_worker_ports(),
            timeout=timeout,
            interval=0.3,
            what=f"Spark workers {', '.join(names)} to register with the master",
            abort=self._dead,
        )

    def _alive_worker_ports(self) -> set[int]:
        return {w.get("port") for w in (self.status() or {}).get("workers", []) if w.get("state") == "ALIVE"}

    def _dead(self) -> str | None:
        for proc in [self.master, *self.worker_procs.values()]:
            if proc is not None and not proc.running():
                return f"{proc.name} exited (see {self.log_dir / (proc.name + '.log')})"
        return None

    def status(self) -> dict | None:
        """The master's JSON status page: workers, applications; None when it does not answer."""
        return _json(f"http://127.0.0.1:{self.master_ui}/json")

    def application(self, name: str) -> str | None:
        """The id of the running application called `name` (the drivers call theirs streamlet-NAME), or whose
        executors are tagged with it (a team's job names itself in its code: APPLICATION_TAG)."""
        apps = sorted((self.status() or {}).get("activeapps", []), key=lambda a: a.get("starttime", 0), reverse=True)
        named = next((a["id"] for a in apps if a.get("name") == name), None)
        if named is not None:
            return named
        tagged = {e.app_id for e in self.executors() if e.pid is not None and executor_tag(e.pid) == name}
        return next((a["id"] for a in apps if a["id"] in tagged), None)

    def executors(self, app_id: str | None = None) -> list[Executor]:
        """The running executors (of one application, or all), with the JVM each runs in (a worker's status page
        lists its running executors under `executors`, the ones that ended under `finishedexecutors`)."""
        found = []
        for name, (_, ui) in self.worker_ports.items():
            listed = [
                (e.get("appid"), str(e.get("id")))
                for e in (_json(f"http://127.0.0.1:{ui}/json") or {}).get("executors", [])
            ]
            listed = [(app, ex) for app, ex in listed if app_id is None or app == app_id]
            proc = self.worker_procs.get(name)
            # /proc only when needed
            pids = _executor_pids(proc) if listed and proc is not None and proc.running() else {}
            found += [Executor(app, ex, name, pids.get((app, ex))) for app, ex in listed]
        return found

    @staticmethod
    def _task_lines(stderr: Path) -> list[tuple[bytes, int, int]]:
        """(what, attempt, task id) for each task an executor logged starting or ending in its stderr (an executor
        logs each task at INFO)."""
        try:
            text = stderr.read_bytes()
        except OSError:
            return []
        return [(what, int(attempt), int(tid)) for what, attempt, tid in TASK_LINE.findall(text)]

    def running_tasks(self, executor: Executor) -> set[int]:
        """The task ids an executor is running now."""
        running: set[int] = set()
        log = EXECUTOR_LOG.format(worker=executor.worker, app=executor.app_id, executor=executor.executor_id)
        for what, _, tid in self._task_lines(self.workdir / log):
            (running.add if what == b"Running" else running.discard)(tid)
        return running

    def retried_tasks(self, app_id: str, besides: str) -> int:
        """How many tasks the application's executors other than `besides` started as a second (or later)
        attempt: retries of tasks lost elsewhere. Read from every executor log of the application on disk, those
        of executors already gone included."""
        return sum(
            1
            for stderr in self.workdir.glob(EXECUTOR_LOG.format(worker="*", app=app_id, executor="*"))
            if stderr.parent.name != besides
            for what, attempt, _ in self._task_lines(stderr)
            if what == b"Running" and attempt > 0
        )

    def worker(self, name: str) -> ManagedProcess:
        if name not in self.worker_procs:
            raise HarnessError(f"no Spark {name} in this run (workers: {', '.join(self.worker_names())})")
        return self.worker_procs[name]


def _executor_pids(worker: ManagedProcess) -> dict[tuple[str, str], int]:
    """(app id, executor id) -> pid, for the executor JVMs a worker started (members of its session)."""
    pids = {}
    for pid in session_members(worker.record):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        args = [a.decode(errors="replace") for a in argv]
        if EXECUTOR_CLASS in args:

            def after(flag: str) -> str:
                return args[args.index(flag) + 1] if flag in args else ""

            pids[(after("--app-id"), after("--executor-id"))] = pid
    return pids


def executor_tag(pid: int) -> str | None:
    """The APPLICATION_TAG in an executor JVM's environment."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None
    prefix = f"{APPLICATION_TAG}=".encode()
    return next((v[len(prefix) :].decode(errors="replace") for v in environ if v.startswith(prefix)), None)


def _json(url: str) -> dict | None:
    try:
        with urllib.request.urlopen(url, timeout=3) as response:
            return json.loads(response.read())
    except (urllib.error.URLError, OSError, ValueError):
        return None
