"""Fault actions on a running pipeline. Each records its begin and end in the history.

They act on a PipelineRun (its drivers, brokers and topics) and know nothing
of schedules: the chaos driver decides when, these decide how.
"""

from __future__ import annotations

import signal
import time

from harness.errors import HarnessError
from harness.runner.pipeline import PipelineRun

SIGNALS = {"SIGKILL": signal.SIGKILL, "SIGTERM": signal.SIGTERM}


def kill_driver(run: PipelineRun, streamlet: str, sig: str = "SIGKILL", restart_after_s: float = 5.0) -> None:
    """SIGKILL (crash) or SIGTERM (graceful stop) a streamlet's driver, then start it again.

    The restart uses the same checkpoint directories, so it resumes from the
    last committed batch; a batch planned but not committed is replayed.
    """
    if sig not in SIGNALS:
        raise HarnessError(f"kill-driver: signal must be SIGKILL or SIGTERM, not {sig!r}")
    proc = run.drivers.get(streamlet)
    if proc is None:
        raise HarnessError(f"kill-driver: no streamlet {streamlet!r} in this run")
    run.history.record("fault_begun", kind="kill-driver", target=streamlet, signal=sig, pid=proc.pid)
    code = proc.kill() if sig == "SIGKILL" else proc.stop(timeout=60)
    run.history.record("process_killed", process=f"streamlet-{streamlet}", pid=proc.pid, signal=sig, exit_code=code)
    time.sleep(restart_after_s)  # the outage itself is part of the fault
    new = run.start_driver(streamlet)
    run.history.record("fault_ended", kind="kill-driver", target=streamlet, new_pid=new.pid)
