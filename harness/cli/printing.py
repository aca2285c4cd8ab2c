"""What the commands print of a report: the verdict, the counts, the doubts, the expectations."""

from __future__ import annotations

import click


def _n(value) -> str:
    return "unknown" if value is None else f"{value:,}"


def print_verdict(report) -> None:
    from harness.report.tables import doubt_lines

    c = report.counts
    dropped = f"dropped by design {_n(c.dropped)}, " if c.dropped != 0 else ""
    undelivered = f"undelivered {_n(c.undelivered)}, " if c.undelivered != 0 else ""
    click.echo(
        f"{report.outcome.upper()}  verdict: {report.verdict}  (acked {_n(c.acked)}, lost {_n(c.lost)}, "
        f"{undelivered}{dropped}"
        f"duplicated deliveries {_n(c.duplicated_deliveries)}, duplicated in state {_n(c.duplicated_in_state)}, "
        f"phantom {_n(c.phantom)}, reordered {_n(c.reordered)})"
    )
    for line in doubt_lines(report):
        click.echo(line)
    for gap in report.gaps:
        click.echo(f"partial: {gap}")
    for e in report.expectations:
        click.echo(f"  {e.status if e.passed else e.status.upper():<7}  {e.name}: {e.detail}")
    counted = {status: sum(e.status == status for e in report.expectations) for status in ("pass", "fail", "unknown")}
    click.echo(
        f"expectations: {counted['pass']} of {len(report.expectations)} passed"
        + (f", {counted['fail']} failed" if counted["fail"] else "")
        + (f", {counted['unknown']} unknown" if counted["unknown"] else "")
    )
