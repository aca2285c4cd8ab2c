"""A driver killed under load: how long until its restart commits a batch with input, against a bare Spark start.

    .venv/bin/python bench/restart.py [--kills 3] [--rate 200] [--no-cds]

Runs ingress -> processor -> egress (upsert) on one embedded broker with the
generator at --rate and SIGKILLs the processor and the egress in turn, one
every 60 s, restarting each at once (restart_after_s 0). Midway between two
kills (and once before the first), with the three drivers running and no
restart under way, it starts two bare probes, one after the other: fresh
Python processes that open a SparkSession with the connector and run one job.

    bare     pyspark's defaults with the connector on spark.jars (and the loopback
             address this machine needs): the start a pipeline's driver has
             without the harness
    tuned    the harness's own session factory: the drivers' class-data-sharing
             archive, collector and JIT flags, the UI off

Restarts and probes so share the same load. From the run's evidence (history
and progress files) each restart splits into

    relaunch     the kill -> the new driver process started (the harness's part)
    start        process start -> its query started (interpreter, JVM, SparkSession, plan)
    first batch  query started -> its first batch with input committed (checkpoint, Kafka, the batch)

and the ratio of the median kill -> first batch to the median bare start is
printed: the figure the speed issue tracks (goal: at most 1.5), and the
stricter one, to the tuned start, which has every cut the drivers have and
none of their work (the query, the checkpoint, the first batch). --no-cds runs
everything without the class-data-sharing archives, for the before figure.
Numbers, not assertions.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from harness.evidence.layout import RunLayout
from harness.runner.console import Console
from harness.runner.run import run_scenario
from harness.scenario.parse import parse_scenario

PROBE_TIMING = """
session = time.monotonic() - t0
spark.range(10).count()
print(f"{session:.3f} {time.monotonic() - t0:.3f}")
spark.stop()
"""
PROBES = {  # the short one first: the slower bare start still ends well before the next kill
    "tuned": """
import time
t0 = time.monotonic()
from harness.spark.session import spark_session
spark = spark_session("tuned-probe")
"""
    + PROBE_TIMING,
    "bare": """
import time
t0 = time.monotonic()
from pyspark.sql import SparkSession
from harness import jars
from harness.spark import versions
connector = ",".join(str(p) for p in jars.jar_set(versions.runtime(None).jars()))
spark = (SparkSession.builder.appName("bare-probe").master("local[1]").config("spark.jars", connector)
         .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1").getOrCreate())
"""
    + PROBE_TIMING,
}


KILLS_FROM_S, GAP_S = 60, 60  # a kill every GAP_S, the processor and the egress in turn; a probe between


def probe_times(kills: int) -> list[float]:
    """Midway between kills (and once before the first): restarted drivers are up again, no restart competes."""
    return [KILLS_FROM_S - GAP_S / 2 + GAP_S * i for i in range(2 * kills)]


def scenario(kills: int, rate: float):
    every = 2 * GAP_S
    duration = KILLS_FROM_S + every * kills + 10
    return parse_scenario(
        {
            "name": "bench-restart",
            "blueprint": {
                "streamlets": {
                    "ingress": {"kind": "ingress"},
                    "processor": {"kind": "processor"},
                    "egress": {"kind": "egress", "settings": {"mode": "upsert"}},
                },
                "connections": {"ingress.out": ["processor.in"], "processor.out": ["egress.in"]},
            },
            "workload": {"rate": rate, "duration_s": duration, "keys": 16},
            "faults": [
                {
                    "kind": "kill-driver",
                    "target": "processor",
                    "start_s": KILLS_FROM_S,
                    "every_s": every,
                    "times": kills,
                    "signal": "SIGKILL",
                    "restart_after_s": 0,
                },
                {
                    "kind": "kill-driver",
                    "target": "egress",
                    "start_s": KILLS_FROM_S + GAP_S,
                    "every_s": every,
                    "times": kills,
                    "signal": "SIGKILL",
                    "restart_after_s": 0,
                },
            ],
        }
    )


def _workload_started(history: Path) -> bool:
    return history.exists() and '"role": "generator"' in history.read_text()


def probe_starts(
    stop: threading.Event,
    history: Path,
    at_s: list[float],
    results: dict[str, list[tuple[float, float]]],
    env: dict[str, str],
) -> None:
    """Each probe's SparkSession start at the given seconds from the workload's start, while the pipeline's drivers
    run: (seconds to the session, seconds to the end of its first job) per probe."""
    while not stop.is_set() and not _workload_started(history):  # the fault times count from the workload's start
        stop.wait(0.2)
    t0 = time.monotonic()
    for at in at_s:
        if stop.wait(max(0.0, at - (time.monotonic() - t0))):
            return
        for name, probe in PROBES.items():
            out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env)
            lines = [line for line in out.stdout.splitlines() if line.count(" ") == 1 and line[0].isdigit()]
            if out.returncode == 0 and lines:
                session, job = map(float, lines[-1].split())
                results.setdefault(name, []).append((session, job))


def _json_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def restarts(run_dir: Path) -> list[dict[str, float]]:
    """Each kill's phases, in seconds, from the history and the restarted driver's progress file."""
    layout = RunLayout(run_dir)
    history = _json_lines(layout.history)
    phases = []
    for i, event in enumerate(history):
        if event["event"] != "fault_begun" or event.get("kind") != "kill-driver":
            continue
        target, kill_ms = event["target"], event["ts_ms"]
        started = next(
            (e for e in history[i:] if e["event"] == "process_started" and e.get("streamlet") == target), None
        )
        if started is None:
            continue
        progress = [e for e in _json_lines(layout.progress(target)) if e.get("pid") == started["pid"]]
        query_started = next((e["ts_ms"] for e in progress if e["event"] == "started"), None)
        first = next(
            (
                e["ts_ms"]
                for e in progress
                if e["event"] == "progress" and (e.get("progress") or {}).get("numInputRows", 0) > 0
            ),
            None,
        )
        if query_started is None or first is None:
            continue
        phases.append(
            {
                "target": target,
                "relaunch": (started["ts_ms"] - kill_ms) / 1000,
                "start": (query_started - started["ts_ms"]) / 1000,
                "first batch": (first - query_started) / 1000,
                "total": (first - kill_ms) / 1000,
            }
        )
    return phases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=3, help="kills per driver (processor and egress)")
    parser.add_argument("--rate", type=float, default=200)
    parser.add_argument("--no-cds", action="store_true", help="run without the class-data-sharing archives")
    args = parser.parse_args()
    if args.no_cds:
        os.environ["HARNESS_CDS"] = "0"  # the drivers and the probes inherit it
    probes: dict[str, list[tuple[float, float]]] = {}
    stop = threading.Event()
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        probe_env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}  # as the drivers have it (harness.spark.launcher)
        prober = threading.Thread(
            target=probe_starts,
            args=(stop, RunLayout(run_dir).history, probe_times(args.kills), probes, probe_env),
            daemon=True,
        )
        prober.start()
        try:
            run_scenario(scenario(args.kills, args.rate), run_dir, console=Console(quiet=True))
        finally:
            stop.set()
            prober.join()
        measured = restarts(run_dir)
    if not measured or set(probes) != set(PROBES):
        raise SystemExit(
            f"nothing to compare: {len(measured)} restarts measured, "
            + ", ".join(f"{len(probes.get(name, []))} {name} starts" for name in PROBES)
        )
    print(f"restarts under load ({'without' if args.no_cds else 'with'} CDS), seconds:")
    print(f"  {'driver':<10}{'relaunch':>10}{'start':>10}{'first batch':>13}{'total':>10}")
    for r in measured:
        print(f"  {r['target']:<10}{r['relaunch']:10.2f}{r['start']:10.2f}{r['first batch']:13.2f}{r['total']:10.2f}")
    medians = {k: statistics.median(r[k] for r in measured) for k in ("relaunch", "start", "first batch", "total")}
    print(
        f"  {'median':<10}{medians['relaunch']:10.2f}{medians['start']:10.2f}"
        f"{medians['first batch']:13.2f}{medians['total']:10.2f}"
    )
    labels = {
        "bare": "bare SparkSession with the connector (pyspark's defaults)",
        "tuned": "the same, tuned as the drivers are (archive, collector, JIT)",
    }
    for name in ("bare", "tuned"):
        starts = probes[name]
        session = statistics.median(s for s, _ in starts)
        job = statistics.median(j for _, j in starts)
        print(f"{labels[name]}, same run, {len(starts)} starts: session {session:.2f}s, with a first job {job:.2f}s")
        print(
            f"  ratio kill -> first batch / its session start: {medians['total'] / session:.2f} "
            f"(/ its start with a first job: {medians['total'] / job:.2f})"
        )


if __name__ == "__main__":
    main()
