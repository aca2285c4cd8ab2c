"""The engines that can reconcile a run's hops, by name: numpy (in memory, the default), dense (in this process,
arrays indexed by record: each table read once, its counts scattered), duckdb (in this process, out of core:
DuckDB spills past its memory limit) and spark (on a cluster, the run directory on storage its executors
share)."""

from __future__ import annotations

from functools import partial
from typing import Callable

ENGINES = ("numpy", "dense", "duckdb", "spark")
DEFAULT_SPARK_MASTER = "local[*]"


def engine(name: str, master: str | None = None) -> Callable | None:
    """What check_run is given to reconcile with the engine `name` (None: numpy); `master`: Spark's master URL."""
    if name == "numpy":
        return None
    from harness.checker.summary.reconciliations import reconcile_with

    if name == "duckdb":
        from harness.checker.summary.duckdb_engine import run_duckdb

        return partial(reconcile_with, run_duckdb, name)
    if name == "dense":
        from harness.checker.summary.dense_engine import run_dense

        return partial(reconcile_with, run_dense, name)
    if name == "spark":
        from harness.checker.summary.spark_engine import run_spark

        return partial(reconcile_with, partial(run_spark, master=master or DEFAULT_SPARK_MASTER), name)
    raise ValueError(f"no engine {name!r} (one of {', '.join(ENGINES)})")
