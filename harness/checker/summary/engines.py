"""The engines that can reconcile a run's hops, by name, each kept for one reason: numpy (in memory: the reference,
small enough to read), dense (in this process, arrays indexed by record: each table read once, its counts
scattered: the scalable default) and spark (the SQL text on a cluster, the run directory on storage its executors
share, or out of core on this machine: evidence that outgrows one process, and identities dense cannot place);
and the default, chosen by the run's evidence."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Callable

from harness.evidence.description import PipelineDescription
from harness.evidence.layout import RunLayout

ENGINES = ("numpy", "dense", "spark")
DEFAULT = "default"  # check_run's engine when none is named: chosen(run_dir)
DEFAULT_SPARK_MASTER = "local[*]"


def chosen_name(run_dir: Path) -> str:
    """The default engine's name: dense where every recording is columnar (it reads them where they lie: a soak's
    evidence in a fraction of numpy's memory), numpy otherwise (JSON recordings are parsed whole in memory whichever
    counts) and for a workload of several source topics (each hop judged against its own: numpy's alone)."""
    layout = RunLayout(Path(run_dir))
    return "dense" if layout.all_columnar and not several_sources(layout) else "numpy"


def several_sources(layout: RunLayout) -> bool:
    """Whether the run's workload fed several source topics (pipeline.json source_keys; unreadable: no)."""
    try:
        return bool(PipelineDescription.load(layout.pipeline).source_keys)
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return False


def chosen(run_dir: Path) -> Engine | None:
    """The default engine (chosen_name's)."""
    return engine(chosen_name(run_dir))


@dataclass(frozen=True)
class Engine:
    """What check_run is given to reconcile with: the engine `name`'s run (reconciliations.Run), whether it is
    `complete`: it also judges a windowed count's cells where the records lie and names the records the causes of a
    re-created source or of a recording's missed offsets read (otherwise such a run is loaded whole), and whether it
    reads the run directory in this
    process, where a run still going is read as one snapshot (checker/snapshot.py; otherwise such a run is loaded
    whole)."""

    name: str
    run: Callable
    complete: bool = False
    in_process: bool = False

    def __call__(self, evidence, hops, spans):
        from harness.checker.summary.reconciliations import reconcile_with
        from harness.checker.windows import window_tally

        results, tallies = reconcile_with(self.run, self.name, evidence, hops, spans, self.complete)
        if not self.complete:  # a windowed count's cells judged from the evidence, loaded whole for it (check.py)
            tallies = replace(tallies, windows=window_tally(evidence))
        return results, tallies


def engine(name: str, master: str | None = None) -> Engine | None:
    """What check_run is given to reconcile with the engine `name` (None: numpy); `master`: Spark's master URL."""
    if name == "numpy":
        return None
    if name == "dense":
        from harness.checker.summary.dense_windows import run_dense

        return Engine(name, run_dense, complete=True, in_process=True)
    if name == "spark":
        from harness.checker.summary.spark_engine import run_spark

        return Engine(name, partial(run_spark, master=master or DEFAULT_SPARK_MASTER))
    raise ValueError(f"no engine {name!r} (one of {', '.join(ENGINES)})")
