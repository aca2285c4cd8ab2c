"""reports/index.html: every run in a folder with its verdict and links, and a trend per scenario
for repeated runs (nightly soaks). Built from each run's report.json, so it is cheap to rewrite."""

from __future__ import annotations

import json
from collections import defaultdict
from html import escape
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from harness.checker.checks.throughput import records_per_s
from harness.files import write_atomically
from harness.report.html import GUARANTEE, OUTCOME_COLORS, STYLE, table
from harness.report.plots import svg
from harness.report.tables import count


def _runs(folder: Path) -> list[dict]:
    runs = []
    for path in sorted(Path(folder).glob("*/report.json")):
        try:
            data = json.loads(path.read_text())
            data["_dir"] = path.parent.name
            data["_started"] = data.get("timeline", {}).get("start_ms", 0)
            runs.append(data)
        except (ValueError, OSError):
            continue  # a report being written or damaged: the next index picks it up
    return sorted(runs, key=lambda r: r["_started"])


def _recovery_percentiles(run: dict) -> tuple[float | None, float | None]:
    """p50 and p99 of the run's measured recovery times (None when none was measured)."""
    times = sorted(f["recovery_s"] for f in run.get("faults", []) if f.get("recovery_s") is not None)
    if not times:
        return None, None
    return float(np.percentile(times, 50)), float(np.percentile(times, 99))


def _throughput(run: dict) -> float | None:
    return records_per_s(run["counts"].get("acked"), run.get("timeline", {}).get("marks", {}))


def _trend_svg(name: str, runs: list[dict]) -> str:
    figure, (counts, recovery, rate) = plt.subplots(3, 1, figsize=(9, 6), sharex=True)
    x = list(range(1, len(runs) + 1))
    nan = float("nan")  # a count that could not be computed is a gap in the line, not a 0

    def series(values):
        return [nan if v is None else v for v in values]

    counts.plot(x, series(r["counts"]["lost"] for r in runs), "o-", color="#d62728", label="lost")
    counts.plot(
        x,
        series(r["counts"]["duplicated_deliveries"] for r in runs),
        "s-",
        color="#1f77b4",
        label="duplicated deliveries",
    )
    percentiles = [_recovery_percentiles(r) for r in runs]
    recovery.plot(x, series(p50 for p50, _ in percentiles), "o-", color="#2ca02c", label="recovery p50 (s)")
    recovery.plot(x, series(p99 for _, p99 in percentiles), "^-", color="#ff7f0e", label="recovery p99 (s)")
    rate.plot(x, series(_throughput(r) for r in runs), "o-", color="#555", label="records/s until drained")
    for ax in (counts, recovery, rate):
        for xi, r in zip(x, runs):
            if not r.get("passed", True):
                ax.axvline(xi, color=OUTCOME_COLORS.get(r.get("outcome", "fail"), "#d62728"), alpha=0.25, linewidth=8)
        ax.legend(fontsize=8, loc="upper left")
    rate.set_xticks(x, [r["_dir"][-15:] for r in runs], rotation=30, fontsize=7)
    counts.set_title(f"{name}: {len(runs)} runs (failed runs shaded red, unknown grey)")
    return svg(figure)


def _seconds(percentiles: tuple[float | None, float | None]) -> str:
    p50, p99 = percentiles
    return "" if p50 is None else f"{p50:.1f} s / {p99:.1f} s"


def _growth(run: dict) -> str:
    measured = [
        p["growth"] for p in ((run.get("resources") or {}).get("processes") or []) if p.get("growth") is not None
    ]
    return f"{max(measured):+.1%}" if measured else ""


def write_index(folder: Path) -> Path:
    folder = Path(folder)
    runs = _runs(folder)
    rows = []
    for r in reversed(runs):
        expectations = r.get("expectations", [])
        passed = sum(e["passed"] for e in expectations)
        outcome = r.get("outcome") or ("pass" if r.get("passed") else "fail")  # schema 1 reports have no outcome
        rows.append(
            [
                f"<a href='{escape(r['_dir'])}/report.html'>{escape(r['_dir'])}</a>",
                escape(r["scenario"]),
                "<span class='badge' "
                f"style='background:{OUTCOME_COLORS.get(outcome, '#777')}'>{escape(outcome.upper())}</span>",
                GUARANTEE.format(escape(r["verdict"]["end_to_end"])),
                f"{passed}/{len(expectations)}",
                count(r["counts"]["acked"]),
                count(r["counts"]["lost"]),
                count(r["counts"]["duplicated_deliveries"]),
                _seconds(_recovery_percentiles(r)),
                _growth(r),
                escape(r.get("status", "")),
                "partial" if r.get("partial") else "",
                f"<a href='{escape(r['_dir'])}/report.md'>md</a> <a href='{escape(r['_dir'])}/report.json'>json</a> "
                f"<a href='{escape(r['_dir'])}/junit.xml'>junit</a>",
            ]
        )
    by_scenario = defaultdict(list)
    for r in runs:
        by_scenario[r["scenario"]].append(r)
    trends = [_trend_svg(name, rs) for name, rs in sorted(by_scenario.items()) if len(rs) > 1]
    html = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>Runs</title><style>{STYLE}</style></head><body>"
        f"<h1>Runs in {escape(str(folder))}</h1>"
        + table(
            [
                "run",
                "scenario",
                "outcome",
                "verdict",
                "expectations passed",
                "acked",
                "lost",
                "duplicated",
                "recovery p50 / p99",
                "memory growth once warm",
                "status",
                "",
                "reports",
            ],
            rows,
            raw_columns=(0, 1, 2, 3, 10, 12),
        )
        + ("<h2>Trends</h2>" + "".join(trends) if trends else "")
        + "</body></html>"
    )
    return write_atomically(folder / "index.html", html)
