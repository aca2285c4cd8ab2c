"""executor-crash: for the whole run, each record's Python worker in a processor exits with a probability;
Spark loses the task and retries it. A whole-run fault: it is begun when the workload starts and ended
when it ends, with the number of tasks Spark reported lost."""

from __future__ import annotations

from harness.faults.kind import FaultKind, Param
from harness.faults.target import Pipeline


def _arm(run: Pipeline, target: str, params: dict) -> None:
    """The probability goes into the processor's settings before its driver starts."""
    run.setting_overrides[target] = {"crash_probability": params["probability"]}


def _tasks_lost(run: Pipeline, target: str, params: dict) -> dict:
    """Tasks Spark reported lost in the driver's log (each executor crash is one); None without the log."""
    try:
        with open(run.layout.log(f"streamlet-{target}"), "rb") as fh:
            return {"tasks_lost": sum(1 for line in fh if b"Lost task" in line)}
    except FileNotFoundError:
        return {"tasks_lost": None}


KIND = FaultKind(
    name="executor-crash",
    target="processor",
    prepare=_arm,
    finish=_tasks_lost,
    recovers=False,
    draw=lambda rng: {"probability": round(rng.uniform(0.0002, 0.001), 4)},
    params={"probability": Param((int, float), minimum=0, maximum=1)},
    help="each record's Python worker exits with this probability; Spark retries the task",
)
