"""report.md: the summary a person reads in a CI log or a pull request."""

from __future__ import annotations

from harness.checker.anomaly_records import WITNESSES
from harness.checker.causes import RETENTION
from harness.checker.counts import CAUSES, VERDICT, WINDOWS
from harness.checker.expect import EXPECTATIONS
from harness.checker.fault_results import FAULTS
from harness.checker.latency import LATENCY
from harness.checker.resources import RESOURCE_USE
from harness.checker.run_report import Report
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


def _table(header: list[str], rows: list[list]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return lines + ["| " + " | ".join("" if v is None else str(v) for v in row) + " |" for row in rows]


def _causes(report: Report) -> list[str]:
    """The causes of what was lost and copied, the retention windows, failed queries and window counts."""
    lines: list[str] = []
    lost = report[CAUSES]["lost"]
    lines += ["## Causes", "", "- lost: " + lost_text(report), "- duplicated copies: " + duplicated_text(report)]
    if headers_text(report):
        lines.append("- " + headers_text(report))
    if lost.get("unexplained"):
        lines.append(f"- **{lost['unexplained']} lost record(s) UNEXPLAINED**")
    for w in report[RETENTION]:
        lines.append(
            f"- {retention_text(w)} - "
            + (
                "the lost set is exactly the deleted range"
                if w["exact"]
                else "**the lost set differs from the deleted range**"
            )
        )
    for f in report.query_failures:
        lines.append(
            f"- {f['streamlet']}'s query failed: {f['error'].splitlines()[0][:300] if f['error'] else '(no message)'}"
        )
    if report[WINDOWS]:
        w = report[WINDOWS]
        lines.append(
            f"- windows: {w.windows} counted, {w.exact} exact, {w.under_counted} under-counted, {w.over_counted} "
            "over-counted, "
            f"{w.phantom} phantom, {w.still_open} still open; {w.records_dropped_by_watermark} record(s) dropped "
            "behind the watermark"
            + (
                ""
                if w.spark_rows_dropped_by_watermark is None
                else f" (Spark's numRowsDroppedByWatermark: {w.spark_rows_dropped_by_watermark} row(s))"
            )
        )
    return lines


def _sections(report: Report) -> list[str]:
    """Each check's section (harness/checker/checks/): its title, its lines, its table."""
    lines = []
    for section in report.sections.values():
        lines += [f"## {section.title}", ""]
        lines += [f"- {line}" for line in section.lines] + ([""] if section.lines else [])
        lines += _table(list(section.header), section.cells()) + [""] if section.header else []
    return lines


def render_markdown(report: Report) -> str:
    statuses = [e.status for e in report[EXPECTATIONS]]
    lines = [f"# {report.scenario}: {report.outcome.upper()} ({report[VERDICT]})", ""]
    if report.description:
        lines += [report.description, ""]
    lines += [
        f"- run: `{report.run_dir}` ({report.status}); {run_info_text(report)}",
        f"- expectations: {statuses.count('pass')} of {len(statuses)} passed"
        + (f", **{statuses.count('fail')} failed**" if "fail" in statuses else "")
        + (f", **{statuses.count('unknown')} unknown** (could not be measured)" if "unknown" in statuses else ""),
    ]
    lines += [f"- **{line}**" for line in doubt_lines(report)]
    if report.gaps:
        lines += ["- **partial report**, evidence missing or unreadable:"] + [f"  - {g}" for g in report.gaps]
    lines += [""]
    if report[EXPECTATIONS]:
        lines += (
            ["## Expectations", ""]
            + _table(
                EXPECTATION_HEADER,
                expectation_rows(report, {"pass": "pass", "fail": "**FAIL**", "unknown": "**UNKNOWN**"}),
            )
            + [""]
        )
    (brief, brief_rows), (detail, detail_rows) = hop_tables(report, lambda text: f"**{text}**")
    lines += ["## Counts per hop", ""] + _table(brief, brief_rows) + [""]
    lines += ["### Where anomalies first appear, and the extra copies", ""] + _table(detail, detail_rows) + [""]
    lines += _causes(report)
    lines += [""]
    trend = period_table(report)
    if trend:
        lines += ["## Periods", "", periods_text(report), ""] + _table(*trend) + [""]
    if report[FAULTS]:
        lines += ["## Faults", ""] + _table(FAULT_HEADER, fault_rows(report)) + [""]
    if report[LATENCY].records:
        lines += ["## Latency (event time at the source -> arrival at the egress)", "", latency_text(report), ""]
    if report[RESOURCE_USE]:
        lines += (
            ["## Resources", "", f"- disk: {disk_text(report)}", ""]
            + _table(RESOURCE_HEADER, resource_rows(report))
            + [""]
        )
    if report[WITNESSES]:
        lines += ["## Witnesses", ""] + _table(WITNESS_HEADER, witness_rows(report)) + [""]
    lines += _sections(report)
    files = anomaly_files(report)
    if files:
        lines += ["Every record of each class: " + ", ".join(f"[{name}]({path})" for name, path in files.items()), ""]
    lines += ["## Words", ""] + [f"- **{term}**: {meaning}" for term, meaning in GLOSSARY] + [""]
    return "\n".join(lines)
