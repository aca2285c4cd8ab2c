"""report.md: the summary a person reads in a CI log or a pull request (the parts of layout.py, as text)."""

from __future__ import annotations

from harness.checker.counts import VERDICT
from harness.checker.expect import EXPECTATIONS
from harness.checker.run_report import Report
from harness.report.layout import PASS, Link, Mark, Part, parts
from harness.report.tables import doubt_lines, run_info_text


def _inline(item) -> str:
    if isinstance(item, tuple):
        return "".join(_inline(i) for i in item)
    if isinstance(item, Mark):
        return item.text if item.status == PASS else f"**{item.text}**"
    if isinstance(item, Link):
        return f"[{item.text}]({item.href})"
    return "" if item is None else str(item)


def _table(header, rows: list[list]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return lines + ["| " + " | ".join(_inline(v) for v in row) + " |" for row in rows]


def part_text(part: Part) -> list[str]:
    """A part as text: its title, its lines, its tables (a part with only a plot has none here)."""
    if not part.lines and not part.tables:
        return []
    lines = [f"## {part.title}", ""]
    lines += [f"- {_inline(line)}" for line in part.lines] + ([""] if part.lines else [])
    for table in part.tables:
        lines += ([table.caption, ""] if table.caption else []) + _table(table.header, table.rows) + [""]
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
    for part in parts(report):
        lines += part_text(part)
    return "\n".join(lines)
