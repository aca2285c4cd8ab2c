"""What a matrix has done so far (out/matrix.json): every finished run's figures, enough to resume it and to
write its reports without reading the runs again."""

from __future__ import annotations

import json
import os
import platform
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness.matrix.spec import MatrixError, MatrixSpec

STATE_VERSION = 1


@dataclass
class RunResult:
    """One run of a cell, as the matrix shows it (each figure from the run's own report.json)."""

    row: str
    column: str
    seed: int
    run_dir: str  # relative to the matrix folder
    status: str  # complete | failed (the run could not complete)
    verdict: str
    outcome: str  # pass | fail | unknown: the cell's expectations, if it has any, and whether the verdict is known
    acked: int | None
    lost: int | None
    duplicated_deliveries: int | None
    duplicated_in_state: int | None
    extra_kept: int | None  # extra copies the egresses' states kept
    extra_absorbed: int | None  # re-delivered copies the egresses absorbed
    faults_played: int
    recovery_max_s: float | None  # the slowest measured recovery (None: none measured)
    recovery_unmeasured: int  # faults that should recover whose recovery could not be measured
    elapsed_s: float
    expectations: int  # how many the cell had
    spark: str | None = None  # the pyspark its drivers ran (versions.json; a column can name another version)
    # what the guarantee cost in the same run: acknowledged records per second until drained, and the latency from a
    # record's event time to its first arrival at the egress (None: not measured, or a state from before them)
    records_per_s: float | None = None
    latency_p50_s: float | None = None
    latency_p99_s: float | None = None
    kafka: str | None = None  # the brokers' Kafka (versions.json kafka_broker; a row or column can name another)


@dataclass
class MatrixState:
    name: str
    description: str
    digest: str
    rows: list[str]
    columns: list[str]
    seeds: list[int]
    duration_s: float | None
    started: str  # local time the matrix was first started
    machine: dict
    # from the first run's versions.json (pyspark and the brokers' Kafka: per run, RunResult.spark and .kafka)
    versions: dict = field(default_factory=dict)
    runs: list[RunResult] = field(default_factory=list)
    elapsed_s: float = 0.0  # time spent running, summed over every invocation
    finished: bool = False

    def done(self, row: str, column: str, seed: int) -> RunResult | None:
        return next((r for r in self.runs if (r.row, r.column, r.seed) == (row, column, seed)), None)


def machine() -> dict:
    return {
        "cpus": os.cpu_count(),
        "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "system": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
    }


def load_state(out: Path, spec: MatrixSpec) -> MatrixState:
    """The matrix's state in `out`: new, or the one a previous (cut-short) invocation left for this same matrix."""
    path = out / "matrix.json"
    if not path.exists():
        return MatrixState(
            spec.name,
            spec.description,
            spec.digest,
            list(spec.rows),
            list(spec.columns),
            spec.seeds(),
            spec.duration_s,
            time.strftime("%Y-%m-%d %H:%M"),
            machine(),
        )
    try:
        data = json.loads(path.read_text())
        if data.get("state_version") != STATE_VERSION:
            raise ValueError(f"state version {data.get('state_version')}")
        runs = [RunResult(**r) for r in data.pop("runs")]
        data.pop("state_version")
        data.pop("cells", None)  # derived from the runs
        state = MatrixState(**data, runs=runs)
    except (ValueError, TypeError, KeyError, OSError) as exc:
        raise MatrixError(f"{path}: not a matrix state this harness can resume ({exc}); use another --out") from None
    if state.digest != spec.digest:
        raise MatrixError(
            f"{out} holds the runs of another matrix (or of this one before it changed): use another --out"
        )
    return state
