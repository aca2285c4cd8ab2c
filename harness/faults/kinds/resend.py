"""resend: for the whole run, the generator sends a share of its records again, the same record (value, key,
headers) `after_s` later, as an upstream that retries does: copies on the source topic that a deduplicating job
must absorb (an application declares its scope: `deduplicates`). A whole-run fault of the workload; the copies
are logged in acks.csv (resend = 1) and counted in the report as `resent_read` where a job passed them on."""

from __future__ import annotations

from harness.faults.kind import FaultKind, Param
from harness.faults.target import Pipeline


def _arm(run: Pipeline, target: str, params: dict) -> None:
    """The share and the delay go into the generator's settings before it starts."""
    run.resend = dict(params)


KIND = FaultKind(
    name="resend",
    target="generator",
    prepare=_arm,
    scope="none",
    recovers=False,
    of_workload=True,
    params={
        "share": Param((int, float), minimum=0, maximum=1),
        "after_s": Param((int, float), 2.0, minimum=0, maximum=3600),
    },
    help="a share of the generator's records is sent again, the same record, after_s later (an upstream that retries)",
)
