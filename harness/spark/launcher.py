"""Start a PySpark application as its own driver process, so it can be killed and restarted.

The driver (a Python process and the JVM it starts) runs in a session of its
own, with its output in a log file; the returned ManagedProcess can SIGTERM,
SIGKILL, pause or resume it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Mapping, Sequence

from harness import jars
from harness.process import ManagedProcess, Supervisor
from harness.process.supervisor import session_members


def driver_env(extra: Mapping[str, str] | None = None, python: str = sys.executable) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "PYSPARK_PYTHON": python,
            "PYSPARK_DRIVER_PYTHON": python,
            "SPARK_LOCAL_IP": "127.0.0.1",
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.update(extra or {})
    return env


def launch_driver(
    supervisor: Supervisor,
    name: str,
    module: str,
    args: Sequence[str],
    log_path: Path,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    python: str = sys.executable,
) -> ManagedProcess:
    """Run `python -m module args...` as a driver named `name` under `supervisor`, in `cwd` (Spark leaves
    folders in its working directory: artifacts/ of every session a kill did not let it clean up); `python` is
    the interpreter of the driver and its Spark Python workers (another Spark version's environment)."""
    argv = [python, "-m", module, *args]
    if cwd is not None:
        Path(cwd).mkdir(parents=True, exist_ok=True)
    return supervisor.start(name, argv, log_path, env=driver_env(env, python), cwd=cwd)


def dump_jvm_threads(proc: ManagedProcess, path: Path) -> bool:
    """Write the thread stacks of the driver's JVM (jstack) to `path`: why a driver hangs."""
    jstack = Path(jars.java_executable()).with_name("jstack")
    dumps = []
    for pid in session_members(proc.record):
        try:
            if Path(f"/proc/{pid}/exe").resolve().name != "java":
                continue
            out = subprocess.run([str(jstack), str(pid)], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        dumps.append(f"=== jstack {pid}\n{out.stdout}{out.stderr}")
    if dumps:
        Path(path).write_text("\n".join(dumps))
    return bool(dumps)
