"""Start a PySpark application as its own driver process, so it can be killed and restarted.

The driver (a Python process and the JVM it starts) runs in a session of its
own, with its output in a log file; the returned ManagedProcess can SIGTERM,
SIGKILL, pause or resume it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Mapping, Sequence

from harness.process import ManagedProcess, Supervisor


def driver_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable,
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
) -> ManagedProcess:
    """Run `python -m module args...` as a driver named `name` under `supervisor`."""
    argv = [sys.executable, "-m", module, *args]
    return supervisor.start(name, argv, log_path, env=driver_env(env))
