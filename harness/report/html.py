"""report.html: one self-contained page (inline CSS and SVG plots, no network) to look at rather than read."""

from __future__ import annotations

from html import escape

from harness.checker.anomaly_records import WITNESSES
from harness.checker.causes import RETENTION
from harness.checker.counts import CAUSES, VERDICT, WINDOWS
from harness.checker.expect import EXPECTATIONS
from harness.checker.fault_results import FAULTS
from harness.checker.findings import WindowCounts
from harness.checker.latency import LATENCY
from harness.checker.resources import RESOURCE_USE
from harness.checker.run_report import Report
from harness.report.plots import anomalies_svg, recovery_svg, resources_svg, timeline_svg
from harness.report.tables import (
    EXPECTATION_HEADER,
    FAULT_HEADER,
    GLOSSARY,
    RESOURCE_HEADER,
    WITNESS_HEADER,
    anomaly_files,
    disk_text,
    doubt_lines,
    duplicated_text,
    expectation_rows,
    fault_rows,
    headers_text,
    hop_tables,
    latency_text,
    lost_text,
    period_table,
    periods_text,
    resource_rows,
    retention_text,
    run_info_text,
    witness_rows,
)

# The outcome (the expectations, passed or not) is the badge in color; the guarantee beside it is neutral: a run
# expected to show at-most-once passes with it, and a strong guarantee is no pass when another expectation failed.
GUARANTEE = "<span class='guarantee'>{}</span>"
OUTCOME_COLORS = {"pass": "#2ca02c", "fail": "#d62728", "unknown": "#7f7f7f"}
STATUS_MARKS = {
    "pass": "<span class='pass'>pass</span>",
    "fail": "<span class='fail'>FAIL</span>",
    "unknown": "<span class='unknown'>UNKNOWN</span>",
}

STYLE = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}
td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:left}
th{background:#f3f3f3}.badge{color:#fff;padding:3px 10px;border-radius:4px}.fail{color:#d62728;font-weight:bold}
.pass{color:#2ca02c}.unknown{color:#555;font-weight:bold}.verdict{font-size:60%;color:#555}
.guarantee{border:1px solid #888;color:#333;padding:2px 9px;border-radius:4px;background:#fff}
.gap{background:#fff3cd;padding:8px;border:1px solid #e0c060}code{font-size:12px}
"""


def table(header: list[str], rows: list[list], raw_columns: tuple[int, ...] = ()) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>"
        + "".join(
            f"<td>{v if i in raw_columns else escape('' if v is None else str(v))}</td>" for i, v in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def render_html(report: Report, plots: bool = True) -> str:
    """The report as one HTML page; without `plots` (a search's runs, judged by the hundred) its plots are left out
    and the page says how to draw them."""
    parts = _head(report) + _notices(report)
    if not plots:
        parts.append(
            f"<p>Plots not drawn for this run: <code>harness report {escape(report.run_dir)}</code> draws them.</p>"
        )
    if report[EXPECTATIONS]:
        parts += [
            "<h2>Expectations</h2>",
            table(EXPECTATION_HEADER, expectation_rows(report, STATUS_MARKS), raw_columns=(0,)),
        ]
    parts += ["<h2>Timeline</h2>", _plot(timeline_svg, report, plots)]
    (brief, brief_rows), (detail, detail_rows) = hop_tables(report)
    parts += [
        "<h2>Counts per hop</h2>",
        table(brief, brief_rows),
        "<details><summary>where each anomaly first appears, and the extra copies per hop</summary>",
        table(detail, detail_rows),
        "</details>",
    ]
    parts += _losses(report)
    if report[WINDOWS]:
        parts.append(_windows_table(report[WINDOWS]))
    trend = period_table(report)
    if trend:
        parts += [
            f"<h2>Periods</h2><details><summary>{escape(periods_text(report))}</summary>",
            table(*trend),
            "</details>",
        ]
    parts.append(_plot(anomalies_svg, report, plots))
    parts += _details(report, plots)
    parts.append("</body></html>")
    return "\n".join(parts)


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


def _losses(report: Report) -> list[str]:
    """Losses and duplicates by cause, lost headers, retention windows and failed queries."""
    lost = report[CAUSES]["lost"]
    parts = [
        "<h2>Losses and duplicates</h2>",
        "<p>Lost: "
        + escape(lost_text(report))
        + (f" <span class='fail'>({lost['unexplained']} UNEXPLAINED)</span>" if lost.get("unexplained") else "")
        + ". Duplicated copies: "
        + escape(duplicated_text(report))
        + ".</p>",
    ]
    if headers_text(report):
        parts.append(f"<p>{escape(headers_text(report)).capitalize()}.</p>")
    for w in report[RETENTION]:
        parts.append(
            f"<p>{escape(retention_text(w))}: "
            + (
                "<span class='pass'>exactly the deleted range</span>"
                if w["exact"]
                else "<span class='fail'>differs from the deleted range</span>"
            )
            + "</p>"
        )
    for f in report.query_failures:
        parts.append(
            f"<p class='fail'>{escape(str(f['streamlet']))}'s query failed:</p><pre>{escape(f['error'][:1500])}</pre>"
        )
    return parts


def _windows_table(w: WindowCounts) -> str:
    header = [
        "windows",
        "exact",
        "under-counted",
        "over-counted",
        "phantom",
        "records missing",
        "dropped by watermark",
        "Spark's numRowsDroppedByWatermark",
    ]
    spark_dropped = "unknown" if w.spark_rows_dropped_by_watermark is None else w.spark_rows_dropped_by_watermark
    row = [w.windows, w.exact, w.under_counted, w.over_counted, w.phantom, w.records_missing]
    return table(header, [row + [w.records_dropped_by_watermark, spark_dropped]])


def _plot(draw, report: Report, plots: bool) -> str:
    return draw(report) if plots else ""


def _details(report: Report, plots: bool) -> list[str]:
    """Faults and recovery, latency, resources, witnesses, the checks' sections and the links to the complete
    sets."""
    parts = []
    if report[FAULTS]:
        parts += ["<h2>Faults and recovery</h2>", table(FAULT_HEADER, fault_rows(report))]
        parts.append(_plot(recovery_svg, report, plots))
    if report[LATENCY].records:
        parts += [
            "<h2>Latency</h2>",
            f"<p>Event time at the source -> first arrival at the egress: {escape(latency_text(report))}.</p>",
        ]
    if report[RESOURCE_USE]:
        parts += [
            "<h2>Resources</h2>",
            f"<p>Disk: {escape(disk_text(report))}.</p>",
            table(RESOURCE_HEADER, resource_rows(report)),
            _plot(resources_svg, report, plots),
        ]
    if report[WITNESSES]:
        parts += ["<h2>Witnesses</h2>", table(WITNESS_HEADER, witness_rows(report))]
    for section in report.sections.values():  # each check's of harness/checker/checks/
        parts.append(f"<h2>{escape(section.title)}</h2>")
        if section.lines:
            parts.append("<ul>" + "".join(f"<li>{escape(line)}</li>" for line in section.lines) + "</ul>")
        if section.header:
            parts.append(table(list(section.header), section.cells()))
    files = anomaly_files(report)
    if files:
        parts.append(
            "<p>Every record of each class: "
            + ", ".join(f"<a href='{escape(path)}'>{escape(name)}</a>" for name, path in files.items())
            + "</p>"
        )
    words = "".join(f"<li><b>{escape(term)}</b>: {escape(meaning)}</li>" for term, meaning in GLOSSARY)
    return parts + [f"<details><summary>Words used in this report</summary><ul>{words}</ul></details>"]
