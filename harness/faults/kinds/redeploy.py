"""redeploy: stop a streamlet, delete its checkpoints, restart it from earliest, latest or a timestamp.

"Deleting" moves the checkpoints to checkpoints-retired/ (Spark no longer sees them; the checker still can).
The timestamp is the stop time minus `timestamp_back_s`. With `checkpoint: keep` the checkpoints stay: the new
startingOffsets is then ignored (Spark's Kafka integration guide: "startingOffsets only applies when a new
streaming query is started, and resuming will always pick up from where the query left off").
"""

from __future__ import annotations

import shutil
import time
from dataclasses import replace

from harness.evidence.history import CHECKPOINT_DELETED
from harness.faults.drivers import record_position, restarted_after, running_driver, stop_driver
from harness.faults.kind import FaultKind, Param
from harness.faults.target import Pipeline


def redeploy(
    run: Pipeline,
    streamlet: str,
    starting: str,
    timestamp_back_s: float,
    down_s: float,
    checkpoint: str,
) -> None:
    running_driver(run, KIND.name, streamlet)
    # skips_to: the new query starts past what it had not read (the checker attributes those records to it)
    skips = checkpoint == "delete" and starting in ("latest", "timestamp")
    KIND.begun(run, streamlet, starting=starting, checkpoint=checkpoint, **({"skips_to": starting} if skips else {}))
    with restarted_after(run, KIND, streamlet) as ended:
        stop_driver(run, streamlet, "SIGTERM")
        stopped_ms = int(time.time() * 1000)
        record_position(run, streamlet)
        if checkpoint == "delete":
            checkpoints = run.layout.checkpoints(streamlet)
            retired = run.layout.retired_checkpoints(streamlet, len(run.layout.retired_checkpoint_dirs(streamlet)) + 1)
            if checkpoints.exists():
                retired.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(str(checkpoints), str(retired))
            run.history.record(CHECKPOINT_DELETED, streamlet=streamlet, path=str(checkpoints), kept_as=str(retired))
        time.sleep(down_s)
        options = run.source_options(streamlet)
        if starting == "timestamp":
            options = replace(options, starting_timestamp_ms=stopped_ms - int(timestamp_back_s * 1000))
        else:
            options = replace(options, starting_offsets=starting, starting_timestamp_ms=None)
        run.source_overrides[streamlet] = options
        ended.update(starting_offsets=options.starting_offsets, starting_timestamp_ms=options.starting_timestamp_ms)


KIND = FaultKind(
    name="redeploy",
    target="streamlet",
    play=redeploy,
    restarts=True,
    draw=lambda rng: {
        "starting": rng.choice(("earliest", "latest")),
        "checkpoint": rng.choice(("delete", "keep")),
        "down_s": round(rng.uniform(1.0, 3.0), 1),
    },
    params={
        "starting": Param(str, "earliest", choices=("earliest", "latest", "timestamp")),
        "timestamp_back_s": Param((int, float), 0.0, minimum=0),
        "down_s": Param((int, float), 3.0, minimum=0),
        "checkpoint": Param(str, "delete", choices=("delete", "keep")),
    },
    help="stop a streamlet, delete its checkpoints (or keep them: the new starting point is then ignored), "
    "restart from earliest, latest or a timestamp",
)
