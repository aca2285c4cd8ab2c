"""reports/index.html: every run in a folder with its verdict and links, and a trend per scenario
for repeated runs (nightly soaks). Built from each run's report.json, so it is cheap to rewrite."""

from __future__ import annotations

import json
from collections import defaultdict
from html import escape
from pathlib import Path

import matplotlib.pyplot as plt

from harness.files import write_atomically
from harness.report.html import STYLE, VERDICT_COLORS, table
from harness.report.plots import svg

VERDICT_RANK = {"exactly-once": 4, "effectively-exactly-once": 3, "at-least-once": 2, "at-most-once": 1, "none": 0}


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


def _trend_svg(name: str, runs: list[dict]) -> str:
    figure, ax = plt.subplots(figsize=(9, 2.4))
    x = list(range(1, len(runs) + 1))
    ax.plot(x, [r["counts"]["lost"] for r in runs], "o-", color="#d62728", label="lost")
    ax.plot(x, [r["counts"]["duplicated_deliveries"] for r in runs], "s-", color="#1f77b4", label="duplicated deliveries")
    for xi, r in zip(x, runs):
        if not r.get("passed", True):
            ax.axvline(xi, color="#d62728", alpha=0.25, linewidth=8)
    ax.set_xticks(x, [r["_dir"][-15:] for r in runs], rotation=30, fontsize=7)
    ax.set_title(f"{name}: {len(runs)} runs (failed runs shaded)")
    ax.legend(fontsize=8)
    return svg(figure)


def write_index(folder: Path) -> Path:
    folder = Path(folder)
    runs = _runs(folder)
    rows = []
    for r in reversed(runs):
        color = VERDICT_COLORS.get(r["verdict"]["end_to_end"], "#777")
        expectations = r.get("expectations", [])
        passed = sum(e["passed"] for e in expectations)
        rows.append([f"<a href='{escape(r['_dir'])}/report.html'>{escape(r['_dir'])}</a>", escape(r["scenario"]),
                     f"<span class='badge' style='background:{color}'>{escape(r['verdict']['end_to_end'])}</span>",
                     ("<span class='pass'>" if passed == len(expectations) else "<span class='fail'>") + f"{passed}/{len(expectations)}</span>",
                     r["counts"]["acked"], r["counts"]["lost"], r["counts"]["duplicated_deliveries"], escape(r.get("status", "")),
                     "partial" if r.get("partial") else "",
                     f"<a href='{escape(r['_dir'])}/report.md'>md</a> <a href='{escape(r['_dir'])}/report.json'>json</a> "
                     f"<a href='{escape(r['_dir'])}/junit.xml'>junit</a>"])
    by_scenario = defaultdict(list)
    for r in runs:
        by_scenario[r["scenario"]].append(r)
    trends = [_trend_svg(name, rs) for name, rs in sorted(by_scenario.items()) if len(rs) > 1]
    html = (f"<!doctype html><html><head><meta charset='utf-8'><title>Runs</title><style>{STYLE}</style></head><body>"
            f"<h1>Runs in {escape(str(folder))}</h1>"
            + table(["run", "scenario", "verdict", "expectations", "acked", "lost", "duplicated", "status", "", "reports"], rows,
                     raw_columns=(0, 1, 2, 3, 7, 9))
            + ("<h2>Trends</h2>" + "".join(trends) if trends else "") + "</body></html>")
    return write_atomically(folder / "index.html", html)
