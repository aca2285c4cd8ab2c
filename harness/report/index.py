"""reports/index.html: every run in a folder with its verdict and links, and a trend per scenario
for repeated runs (nightly soaks). Built from each run's report.json, so it is cheap to rewrite."""

from __future__ import annotations

import json
from collections import defaultdict
from html import escape
from pathlib import Path

import matplotlib.pyplot as plt

from harness.files import write_atomically
from harness.report.html import OUTCOME_COLORS, STYLE, VERDICT_COLORS, table
from harness.report.tables import count
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
    nan = float("nan")  # a count that could not be computed is a gap in the line, not a 0
    ax.plot(x, [nan if r["counts"]["lost"] is None else r["counts"]["lost"] for r in runs], "o-", color="#d62728", label="lost")
    ax.plot(x, [nan if r["counts"]["duplicated_deliveries"] is None else r["counts"]["duplicated_deliveries"] for r in runs], "s-",
            color="#1f77b4", label="duplicated deliveries")
    for xi, r in zip(x, runs):
        if not r.get("passed", True):
            ax.axvline(xi, color=OUTCOME_COLORS.get(r.get("outcome", "fail"), "#d62728"), alpha=0.25, linewidth=8)
    ax.set_xticks(x, [r["_dir"][-15:] for r in runs], rotation=30, fontsize=7)
    ax.set_title(f"{name}: {len(runs)} runs (failed runs shaded red, unknown grey)")
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
        outcome = r.get("outcome") or ("pass" if r.get("passed") else "fail")  # schema 1 reports have no outcome
        rows.append([f"<a href='{escape(r['_dir'])}/report.html'>{escape(r['_dir'])}</a>", escape(r["scenario"]),
                     f"<span class='badge' style='background:{OUTCOME_COLORS.get(outcome, '#777')}'>{escape(outcome.upper())}</span>",
                     f"<span class='badge' style='background:{color}'>{escape(r['verdict']['end_to_end'])}</span>",
                     f"{passed}/{len(expectations)}",
                     count(r["counts"]["acked"]), count(r["counts"]["lost"]), count(r["counts"]["duplicated_deliveries"]), escape(r.get("status", "")),
                     "partial" if r.get("partial") else "",
                     f"<a href='{escape(r['_dir'])}/report.md'>md</a> <a href='{escape(r['_dir'])}/report.json'>json</a> "
                     f"<a href='{escape(r['_dir'])}/junit.xml'>junit</a>"])
    by_scenario = defaultdict(list)
    for r in runs:
        by_scenario[r["scenario"]].append(r)
    trends = [_trend_svg(name, rs) for name, rs in sorted(by_scenario.items()) if len(rs) > 1]
    html = (f"<!doctype html><html><head><meta charset='utf-8'><title>Runs</title><style>{STYLE}</style></head><body>"
            f"<h1>Runs in {escape(str(folder))}</h1>"
            + table(["run", "scenario", "outcome", "verdict", "expectations passed", "acked", "lost", "duplicated", "status", "", "reports"],
                    rows, raw_columns=(0, 1, 2, 3, 8, 10))
            + ("<h2>Trends</h2>" + "".join(trends) if trends else "") + "</body></html>")
    return write_atomically(folder / "index.html", html)
