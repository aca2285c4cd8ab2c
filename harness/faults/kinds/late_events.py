"""late-events: for the whole run, a share of the generator's records carry an event time set back; a windowed
or deduplicating streamlet may drop them behind its watermark, by design. A whole-run fault of the workload: the
generator writes them from its start (or `after_s` into the run), and `workload.late_share` (with late_by_s and
late_after_s) is the same fault written as a workload setting."""

from __future__ import annotations

from harness.faults.kind import FaultKind, Param
from harness.faults.target import Pipeline


def _arm(run: Pipeline, target: str, params: dict) -> None:
    """The share goes into the generator's settings before it starts."""
    run.late_events = dict(params)


KIND = FaultKind(
    name="late-events",
    target="generator",
    prepare=_arm,
    scope="none",
    recovers=False,
    of_workload=True,
    params={
        "share": Param((int, float), minimum=0, maximum=1),
        "late_by_s": Param((int, float), minimum=0),
        "after_s": Param((int, float), 0.0, minimum=0),
    },
    help="a share of the generator's records carry an event time this much in the past (from after_s into the run)",
)
