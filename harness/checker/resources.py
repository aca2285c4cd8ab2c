"""How the run's processes and its directory grew, from the history's `resources` samples (a soak's health).

Memory growth is measured per process over the part of its life that is
warm (from WARMUP_S after both the workload's start and the process's own
start): the median RSS of its last WINDOW_S against the median of its first
WINDOW_S once warm. Medians of windows, not single samples, because a JVM's
RSS moves with its collections; a leak still shows, and more the longer the
run. A process whose warm part is shorter than two windows (restarted late,
or a short run) has no growth figure: None, not 0.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from harness.checker.findings import ProcessMemory, ResourceUse
from harness.checker.hops import TALLIES
from harness.checker.step import Context, Key, Step
from harness.checker.timeline import run_start_ms
from harness.evidence.history import BUDGET, MIB, RESOURCES
from harness.evidence.layout import RunLayout

WARMUP_S = 600.0  # the first 10 minutes: JIT, caches and Spark's state stores filling up
WINDOW_S = 300.0  # growth compares the medians of the first and the last 5 minutes once warm
RESOURCE_USE: Key[ResourceUse | None] = Key("resources", reported=True)  # None: no samples


def _warm_and_end(life: list[tuple[int, float]], warm_from_ms: float) -> tuple[float | None, float | None]:
    """Medians of the first and the last WINDOW_S of the warm samples, or (None, None) when the warm part is
    shorter than two windows."""
    warm = [(ts, mb) for ts, mb in life if ts >= warm_from_ms]
    if not warm or warm[-1][0] - warm[0][0] < 2 * WINDOW_S * 1000:
        return None, None
    first = [mb for ts, mb in warm if ts < warm[0][0] + WINDOW_S * 1000]
    last = [mb for ts, mb in warm if ts > warm[-1][0] - WINDOW_S * 1000]
    return round(statistics.median(first), 1), round(statistics.median(last), 1)


def resource_use(history: list[dict], workload_start_ms: int | None) -> ResourceUse | None:
    """The trend over the run, or None when the run recorded no samples (an older harness, or none taken)."""
    samples = [e for e in history if e.get("event") == RESOURCES and isinstance(e.get("rss_mb"), dict)]
    if not samples:
        return None
    first = samples[0]["ts_ms"]
    t0 = workload_start_ms if workload_start_ms is not None else first  # the reports' time base
    warm_from = t0 + WARMUP_S * 1000
    processes = []
    names = sorted({name for s in samples for name in s["rss_mb"]})
    for name in names:
        seen = [
            (s["ts_ms"], s["rss_mb"][name])
            for s in samples
            if isinstance(s["rss_mb"].get(name), dict) and isinstance(s["rss_mb"][name].get("mb"), (int, float))
        ]
        if not seen:
            continue
        last_pid = seen[-1][1].get("pid")
        life = [(ts, v["mb"]) for ts, v in seen if v.get("pid") == last_pid]
        warm, end = _warm_and_end(life, max(warm_from, life[0][0] + WARMUP_S * 1000))
        processes.append(
            ProcessMemory(
                name,
                last_pid,
                seen[0][1]["mb"],
                warm,
                life[-1][1],
                end,
                max(v["mb"] for _, v in seen),
                None if warm is None or end is None or warm <= 0 else round((end - warm) / warm, 4),
            )
        )
    disk = [sum(v for v in (s.get("disk_mb") or {}).values() if isinstance(v, (int, float))) for s in samples]
    not_evidence = RunLayout(Path(".")).not_evidence
    evidence = [d - sum((s.get("disk_mb") or {}).get(n) or 0 for n in not_evidence) for d, s in zip(disk, samples)]
    budget = next((e.get("budget_bytes") for e in history if e.get("event") == BUDGET), None)
    series = {
        "t_s": [round((s["ts_ms"] - t0) / 1000, 1) for s in samples],
        "disk_mb": [round(d, 1) for d in disk],
        "rss_mb": {
            name: [
                ((s["rss_mb"].get(name) or {}).get("mb") if isinstance(s["rss_mb"].get(name), dict) else None)
                for s in samples
            ]
            for name in names
        },
    }
    return ResourceUse(
        len(samples),
        round((samples[-1]["ts_ms"] - first) / 1000, 1),
        WARMUP_S,
        processes,
        round(disk[0], 1),
        round(disk[-1], 1),
        round(max(disk), 1),
        dict(samples[-1].get("disk_mb") or {}),
        series,
        int(max(evidence) * MIB),
        int(budget) if isinstance(budget, (int, float)) else None,
    )


def _resources(context: Context) -> dict:
    return {RESOURCE_USE: resource_use(context.evidence.history, run_start_ms(context))}


STEP = Step("resources", _resources, writes=(RESOURCE_USE,), uses=(TALLIES,))
