"""report.html: one self-contained page (inline CSS and SVG plots, no network) to look at rather than read: the parts
of layout.py, with their plots."""

from __future__ import annotations

from html import escape

from harness.checker.counts import VERDICT
from harness.checker.expect import EXPECTATIONS
from harness.checker.run_report import Report
from harness.report.layout import (
    ANOMALIES_PLOT,
    RECOVERY_PLOT,
    RESOURCES_PLOT,
    STRONG,
    TIMELINE_PLOT,
    Link,
    Mark,
    Part,
    Table,
    parts,
)
from harness.report.plots import anomalies_svg, recovery_svg, resources_svg, timeline_svg
from harness.report.tables import doubt_lines, run_info_text

PLOTS = {
    TIMELINE_PLOT: timeline_svg,
    ANOMALIES_PLOT: anomalies_svg,
    RECOVERY_PLOT: recovery_svg,
    RESOURCES_PLOT: resources_svg,
}

# The outcome (the expectations, passed or not) is the badge in color; the guarantee beside it is neutral: a run
# expected to show at-most-once passes with it, and a strong guarantee is no pass when another expectation failed.
GUARANTEE = "<span class='guarantee'>{}</span>"
OUTCOME_COLORS = {"pass": "#2ca02c", "fail": "#d62728", "unknown": "#7f7f7f"}

STYLE = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}
td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:left}
th{background:#f3f3f3}.badge{color:#fff;padding:3px 10px;border-radius:4px}.fail{color:#d62728;font-weight:bold}
.pass{color:#2ca02c}.unknown{color:#555;font-weight:bold}.verdict{font-size:60%;color:#555}
.guarantee{border:1px solid #888;color:#333;padding:2px 9px;border-radius:4px;background:#fff}
.gap{background:#fff3cd;padding:8px;border:1px solid #e0c060}code{font-size:12px}
"""


def _inline(item) -> str:
    if isinstance(item, tuple):
        return "".join(_inline(i) for i in item)
    if isinstance(item, Mark):
        return (
            f"<b>{escape(item.text)}</b>"
            if item.status == STRONG
            else f"<span class='{item.status}'>{escape(item.text)}</span>"
        )
    if isinstance(item, Link):
        return f"<a href='{escape(item.href)}'>{escape(item.text)}</a>"
    return escape("" if item is None else str(item))


def table(header, rows: list[list], raw_columns: tuple[int, ...] = ()) -> str:
    """`raw_columns`: cells already HTML (the index's links and badges)."""
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{v if i in raw_columns else _inline(v)}</td>" for i, v in enumerate(row)) + "</tr>"
        for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def _table(shown: Table) -> list[str]:
    if shown.folded:
        return [f"<details><summary>{escape(shown.caption)}</summary>", table(shown.header, shown.rows), "</details>"]
    return ([f"<p>{escape(shown.caption)}</p>"] if shown.caption else []) + [table(shown.header, shown.rows)]


def _part(part: Part, report: Report, plots: bool) -> list[str]:
    """A part on the page: its title, its lines, its tables and its plot (without `plots`, none is drawn, and the page
    differs by nothing else)."""
    items = "<ul>" + "".join(f"<li>{_inline(line)}</li>" for line in part.lines) + "</ul>" if part.lines else ""
    if part.folded:
        return [f"<details><summary>{escape(part.title)}</summary>{items}</details>"]
    if not (part.lines or part.tables or part.plot):
        return []
    drawn = PLOTS[part.plot](report) if plots and part.plot else ""  # a plot not drawn leaves its title
    return [
        f"<h2>{escape(part.title)}</h2>",
        *([items] if items else []),
        *(t for shown in part.tables for t in _table(shown)),
        *([drawn] if part.plot else []),
    ]


def render_html(report: Report, plots: bool = True) -> str:
    """The report as one HTML page; without `plots` (a search's runs, judged by the hundred) its plots are left out
    and the page says how to draw them."""
    page = _head(report) + _notices(report)
    if not plots:
        page.append(
            f"<p>Plots not drawn for this run: <code>harness report {escape(report.run_dir)}</code> draws them.</p>"
        )
    for part in parts(report):
        page += _part(part, report, plots)
    page.append("</body></html>")
    return "\n".join(page)


def _head(report: Report) -> list[str]:
    """The title, the outcome and verdict badges, the description and the run's line."""
    outcome = report.outcome
    statuses = [e.status for e in report[EXPECTATIONS]]
    summary = (
        ", ".join(
            f"<span class='{s}'>{statuses.count(s)} {word}</span>"
            for s, word in (("pass", "passed"), ("fail", "failed"), ("unknown", "unknown"))
            if s in statuses
        )
        or "no expectations"
    )
    return [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(report.scenario)}: {outcome.upper()} "
        f"({escape(report[VERDICT])})</title><style>{STYLE}</style></head><body>",
        f"<h1>{escape(report.scenario)} <span class='badge' "
        f"style='background:{OUTCOME_COLORS[outcome]}'>{outcome.upper()}</span> "
        f"<span class='verdict'>verdict: {GUARANTEE.format(escape(report[VERDICT]))}</span></h1>",
        f"<p>{escape(report.description)}</p><p>run <code>{escape(report.run_dir)}</code> ({escape(report.status)}); "
        f"expectations: {summary}</p><p>{escape(run_info_text(report))}</p>",
    ]


def _notices(report: Report) -> list[str]:
    """The doubts, then the gaps of a partial report."""
    parts = []
    if doubt_lines(report):
        parts.append(
            "<div class='gap'><ul>"
            + "".join(f"<li>{escape(line)}</li>" for line in doubt_lines(report))
            + "</ul></div>"
        )
    if report.gaps:
        parts.append(
            "<div class='gap'><b>Partial report</b>: evidence missing or unreadable<ul>"
            + "".join(f"<li>{escape(g)}</li>" for g in report.gaps)
            + "</ul></div>"
        )
    return parts
