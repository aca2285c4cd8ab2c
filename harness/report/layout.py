"""The report's parts, in order, each titled once: what report.md and report.html both lay out (markdown.py and
html.py render the same walk, each its own way), the checks' sections among them. A part has lines, tables and,
for the page, a plot; a line is text, or a tuple of text, marks (a status to show) and links."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from harness.checker.anomaly_records import WITNESSES
from harness.checker.causes import RETENTION
from harness.checker.counts import CAUSES, WINDOWS
from harness.checker.expect import EXPECTATIONS
from harness.checker.fault_results import FAULTS
from harness.checker.latency import LATENCY
from harness.checker.resources import RESOURCE_USE
from harness.checker.run_report import Report
from harness.checker.section import Section
from harness.report.tables import (
    EXPECTATION_HEADER,
    FAULT_HEADER,
    GLOSSARY,
    RESOURCE_HEADER,
    WITNESS_HEADER,
    anomaly_files,
    disk_text,
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
    witness_rows,
)

PASS, FAIL, UNKNOWN, STRONG = "pass", "fail", "unknown", "strong"  # what a mark shows
# the plots the page draws (harness/report/plots.py), by name: a part's picture
TIMELINE_PLOT, ANOMALIES_PLOT, RECOVERY_PLOT, RESOURCES_PLOT = "timeline", "anomalies", "recovery", "resources"
STATUS_TEXT = {PASS: "pass", FAIL: "FAIL", UNKNOWN: "UNKNOWN"}
WINDOW_HEADER = (
    "windows",
    "exact",
    "under-counted",
    "over-counted",
    "phantom",
    "still open",
    "records missing",
    "dropped by watermark",
    "Spark's numRowsDroppedByWatermark",
)


@dataclass(frozen=True)
class Mark:
    """Text shown with its status (pass, fail, unknown) or set apart (strong)."""

    text: str
    status: str


@dataclass(frozen=True)
class Link:
    text: str
    href: str  # relative to the run directory


Inline = Union[str, Mark, Link]
Line = Union[str, tuple]  # a str, or a tuple of Inline


@dataclass(frozen=True)
class Table:
    """A table; `caption` says what it holds, and a `folded` one is for those who look further (the page folds it)."""

    header: tuple[str, ...]
    rows: list[list]
    caption: str = ""
    folded: bool = False


@dataclass(frozen=True)
class Part:
    """One titled part of the report: its lines, its tables, its plot on the page; a `folded`
    part is at hand, not read first (the words used)."""

    title: str
    lines: tuple[Line, ...] = ()
    tables: tuple[Table, ...] = ()
    plot: str | None = None  # the plot the page draws of it (one of the *_PLOT names)
    folded: bool = False


def parts(report: Report) -> list[Part]:
    """The report's parts in order; those with nothing to show of this run are left out."""
    found = [
        _expectations(report),
        Part("Timeline", plot=TIMELINE_PLOT),
        _hops(report),
        _causes(report),
        _periods(report),
        _faults(report),
        _latency(report),
        _resources(report),
        _witnesses(report),
        *(section_part(section) for section in report.sections.values()),
        _files(report),
        Part(
            "Words used in this report",
            tuple((Mark(term, STRONG), f": {meaning}") for term, meaning in GLOSSARY),
            folded=True,
        ),
    ]
    return [part for part in found if part is not None]


def section_part(section: Section) -> Part:
    """A check's section (harness/checker/checks/) as a part."""
    tables = (Table(section.header, section.cells()),) if section.header else ()
    return Part(section.title, section.lines, tables)


def _expectations(report: Report) -> Part | None:
    if not report[EXPECTATIONS]:
        return None
    marks = {status: Mark(text, status) for status, text in STATUS_TEXT.items()}
    return Part("Expectations", tables=(Table(tuple(EXPECTATION_HEADER), expectation_rows(report, marks)),))


def _hops(report: Report) -> Part:
    (brief, brief_rows), (detail, detail_rows) = hop_tables(report, lambda text: Mark(text, STRONG))
    caption = "where each anomaly first appears, and the extra copies per hop"
    return Part(
        "Counts per hop", tables=(Table(tuple(brief), brief_rows), Table(tuple(detail), detail_rows, caption, True))
    )


def _causes(report: Report) -> Part:
    """Losses and duplicates by cause, lost headers, the retention windows, failed queries and the window counts."""
    lines: list[Line] = [f"lost: {lost_text(report)}", f"duplicated copies: {duplicated_text(report)}"]
    if headers_text(report):
        lines.append(headers_text(report))
    unexplained = report[CAUSES]["lost"].get("unexplained")
    if unexplained:
        lines.append((Mark(f"{unexplained} lost record(s) UNEXPLAINED", FAIL),))
    for w in report[RETENTION]:
        exact = Mark("the lost set is exactly the deleted range", PASS)
        lines.append(
            (
                f"{retention_text(w)}: ",
                exact if w["exact"] else Mark("the lost set differs from the deleted range", FAIL),
            )
        )
    for f in report.query_failures:
        first = f["error"].splitlines()[0][:300] if f["error"] else "(no message)"
        lines.append((Mark(f"{f['streamlet']}'s query failed", FAIL), f": {first}"))
    w = report[WINDOWS]
    tables = ()
    if w:
        spark = "unknown" if w.spark_rows_dropped_by_watermark is None else w.spark_rows_dropped_by_watermark
        row = [w.windows, w.exact, w.under_counted, w.over_counted, w.phantom, w.still_open, w.records_missing]
        tables = (Table(WINDOW_HEADER, [row + [w.records_dropped_by_watermark, spark]], "the window counts"),)
    return Part("Causes", tuple(lines), tables, ANOMALIES_PLOT)


def _periods(report: Report) -> Part | None:
    trend = period_table(report)
    if not trend:
        return None
    return Part("Periods", tables=(Table(tuple(trend[0]), trend[1], periods_text(report), True),))


def _faults(report: Report) -> Part | None:
    if not report[FAULTS]:
        return None
    return Part("Faults and recovery", tables=(Table(tuple(FAULT_HEADER), fault_rows(report)),), plot=RECOVERY_PLOT)


def _latency(report: Report) -> Part | None:
    if not report[LATENCY].records:
        return None
    return Part("Latency", (f"event time at the source -> first arrival at the egress: {latency_text(report)}",))


def _resources(report: Report) -> Part | None:
    if not report[RESOURCE_USE]:
        return None
    table = Table(tuple(RESOURCE_HEADER), resource_rows(report))
    return Part("Resources", (f"disk: {disk_text(report)}",), (table,), RESOURCES_PLOT)


def _witnesses(report: Report) -> Part | None:
    if not report[WITNESSES]:
        return None
    return Part("Witnesses", tables=(Table(tuple(WITNESS_HEADER), witness_rows(report)),))


def _files(report: Report) -> Part | None:
    files = anomaly_files(report)
    if not files:
        return None
    links = [item for name, path in files.items() for item in (", ", Link(name, path))][1:]
    return Part("Every record of each class", (tuple(links),))
