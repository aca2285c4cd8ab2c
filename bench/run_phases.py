"""Where a short run's time goes, phase by phase, everything included (issue: a run's fixed cost).

    .venv/bin/python bench/run_phases.py [--repeat 3] [--duration 10] [SCENARIO]

Runs `harness run SCENARIO --duration D` (default scenarios/baseline.yaml: three drivers, no fault) --repeat times,
each as a user would (a new process, reports written), and cuts each run at the moments its history.jsonl records:

    broker        the command's start to the broker up (the interpreter, imports, the broker's start)
    topics        to the drivers launched (topics created, outputs prepared, the recording started)
    drivers       to the generator's start (every driver's first batch, the preflight)
    workload      to the generator's end (the workload's own duration)
    drain         to `drained` (every hop has read everything there is)
    stop          to the last driver stopped
    evidence      to `run_ended` (the topics' recording completed, the stores exported)
    report        to the command's exit (the check, report.json/.md/.html, junit.xml, the index)

Prints the median of each phase, the run end to end and its fixed part (the run minus its workload). Numbers, not
assertions.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PHASES = ("broker", "topics", "drivers", "workload", "drain", "stop", "evidence", "report")


def _moments(history: Path) -> list[float]:
    """The epoch seconds at which each phase ended, but the last (the command's exit)."""
    events = [json.loads(line) for line in history.read_text().splitlines() if line.strip()]

    def first(match) -> float:
        return next(e["ts_ms"] for e in events if match(e)) / 1000

    def last(match) -> float:
        return [e["ts_ms"] for e in events if match(e)][-1] / 1000

    return [
        first(lambda e: e["event"] == "process_started" and e["process"].startswith("broker")),
        first(lambda e: e["event"] == "process_started" and e["process"].startswith("streamlet-")),
        first(lambda e: e["event"] == "process_started" and e["process"] == "generator"),
        first(lambda e: e["event"] == "process_exited" and e["process"] == "generator"),
        first(lambda e: e["event"] == "drained"),
        last(lambda e: e["event"] == "process_stopped" and e["process"].startswith("streamlet-")),
        first(lambda e: e["event"] == "run_ended"),
    ]


def one_run(scenario: str, duration: float, out: Path) -> list[float]:
    """The seconds each phase of one run took."""
    t0 = time.time()
    subprocess.run(
        [str(Path(sys.executable).parent / "harness"), "run", scenario, "--duration", str(duration), "--out", str(out)],
        check=True,
        stdout=subprocess.DEVNULL,
        cwd=ROOT,
    )
    ends = [*_moments(out / "history.jsonl"), time.time()]
    return [b - a for a, b in zip([t0, *ends], ends)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scenario", nargs="?", default="scenarios/baseline.yaml")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--duration", type=float, default=10.0)
    args = parser.parse_args()
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):
            runs.append(one_run(args.scenario, args.duration, Path(tmp) / f"run-{i}"))
            print(f"run {i + 1}/{args.repeat}: {sum(runs[-1]):.1f}s", flush=True)
    print(f"\n{args.scenario} --duration {args.duration:g}, median of {args.repeat} (seconds):")
    for i, phase in enumerate(PHASES):
        print(f"  {phase:<10} {statistics.median(r[i] for r in runs):6.1f}")
    totals = [sum(r) for r in runs]
    fixed = [sum(r) - r[PHASES.index("workload")] for r in runs]
    print(f"  {'total':<10} {statistics.median(totals):6.1f}   (min {min(totals):.1f}, max {max(totals):.1f})")
    print(f"  {'fixed':<10} {statistics.median(fixed):6.1f}   the run minus its workload")


if __name__ == "__main__":
    main()
