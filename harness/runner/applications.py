"""Starting an application (a team's own job) unchanged: its command with the placeholders filled in, the Kafka
connector given to its Spark without touching its code or its settings.

The connector goes on the driver's and the executors' class path (spark.driver/executor.extraClassPath), never
through spark.jars or --jars, which would replace the jars a job sets in code. Under `python` the options reach
Spark in PYSPARK_SUBMIT_ARGS (merged with one the job's environment already has, which must end in pyspark-shell);
under `spark-submit` they come before the job's own options, which therefore win.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from harness import jars
from harness.errors import HarnessError
from harness.spark.versions import SparkRuntime

SUBMIT_ARGS = "PYSPARK_SUBMIT_ARGS"
SHELL = "pyspark-shell"


def connector_options(runtime: SparkRuntime) -> list[str]:
    """spark-submit options putting the drivers' Spark's Kafka connector on the driver's and executors' class path."""
    classpath = ":".join(str(p) for p in jars.connector_jars(runtime.jar_set))
    return [
        "--conf",
        f"spark.driver.extraClassPath={classpath}",
        "--conf",
        f"spark.executor.extraClassPath={classpath}",
    ]


def application_command(
    command: list[str], env: dict[str, str], runtime: SparkRuntime
) -> tuple[list[str], dict[str, str]]:
    """The argv and the environment additions that start `command` (placeholders already filled) on `runtime`'s
    Spark: `python` is the drivers' interpreter (its pyspark matches the connector), `spark-submit` is its Spark's."""
    options = connector_options(runtime)
    bin_dir = Path(runtime.python).parent
    if command[0] == "spark-submit":
        return [str(bin_dir / "spark-submit"), *options, *command[1:]], dict(env)
    theirs = env.get(SUBMIT_ARGS, os.environ.get(SUBMIT_ARGS, "")).split()
    if theirs and theirs[-1] != SHELL:
        raise HarnessError(f"{SUBMIT_ARGS} of the application must end in {SHELL}, got {' '.join(theirs)!r}")
    merged = [*options, *theirs[:-1], SHELL]
    return [runtime.python, *command[1:]], {**env, SUBMIT_ARGS: shlex.join(merged)}
