"""A workload produced by several generator processes: the offered load scales with cores.

The generator started with `workers: N` starts N copies of itself (`--worker w`), waits for them and prints
their summed summary. Worker w produces the keys k with k % N == w (so each key's seqs stay one process's count),
at rate / N, its share of the planned records, and writes its own ack segments (acks/worker-NN/). The workers
stay in the generator's session: a signal to the generator's session (stop, kill, pause) reaches every one.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from dataclasses import replace

from harness.evidence.acks import worker_ack_log
from harness.workload.generator_settings import WorkloadSettings

SUMMED = ("sent", "acked", "unknown", "aborted")


def share(total: int, worker: int, workers: int) -> int:
    """Worker `worker`'s part of `total` when it is split as evenly as it can be among `workers`."""
    return total // workers + (worker < total % workers)


def worker_settings(settings: WorkloadSettings, worker: int, total: int | None) -> WorkloadSettings:
    """The settings of worker `worker` of the workload `settings` (of `total` planned records, None: unbounded)."""
    n = settings.workers
    return replace(
        settings,
        worker=worker,
        rate=settings.rate / n,
        duration_s=None,  # its share of the planned records bounds it (None: until stopped, as the whole)
        max_records=None if total is None else share(total, worker, n),
        late_after=share(settings.late_after, worker, n),
        ack_log=worker_ack_log(settings.ack_log, worker),
    )


def run_workers(settings_path: str, workers: int) -> int:
    """Run the workload as `workers` processes; returns the first failed worker's exit code (0: none failed). A
    failed worker stops the others: a workload with a part missing is not the one asked for."""
    argv = [sys.executable, "-m", "harness.workload.generator", settings_path, "--worker"]
    children: list[subprocess.Popen] = []
    asked = set()  # the stop signals the generator was sent: a worker that died of one was stopped, not failed

    def forward(signum, _frame) -> None:
        asked.add(-signum)
        for child in children:
            if child.poll() is None:
                child.send_signal(signum)

    def code_of(child: subprocess.Popen) -> int | None:
        # a worker stopped before its own handler was installed (still starting) dies of the signal itself
        return 0 if child.returncode in asked else child.returncode

    signal.signal(signal.SIGTERM, forward)  # before the first worker starts: a stop then reaches every one
    signal.signal(signal.SIGINT, forward)
    for worker in range(workers):
        if not asked:  # a workload stopped while its workers start starts no more of them
            children.append(subprocess.Popen([*argv, str(worker)], stdout=subprocess.PIPE, text=True))
    failed = 0
    while any(child.poll() is None for child in children):
        code = next((code_of(c) for c in children if code_of(c) not in (None, 0)), 0)
        if code and not failed:
            failed = code
            print(f"generator: a worker exited with code {code}: stopping the others", file=sys.stderr, flush=True)
            forward(signal.SIGTERM, None)
        time.sleep(0.2)
    failed = failed or next((code_of(c) for c in children if code_of(c)), 0)
    total = dict.fromkeys(SUMMED, 0)
    for child in children:
        for line in child.stdout.read().splitlines():
            summary = json.loads(line).get("generator", {}) if line.startswith("{") else {}
            for name in SUMMED:
                total[name] += summary.get(name, 0)
    print(json.dumps({"generator": {**total, "workers": workers}}), flush=True)
    return failed
