"""What the commands print of a report: the verdict, the counts, the doubts, the expectations."""

from __future__ import annotations

import click


def _n(value) -> str:
    return "unknown" if value is None else f"{value:,}"


def plan_text(scenario) -> str:
    """What a run of `scenario` would do, checked and started nowhere (`run --dry-run`)."""

    w, blueprint = scenario.workload, scenario.blueprint
    lines = [f"scenario {scenario.name}: valid; nothing started (--dry-run)"]
    for name in blueprint.order():
        inst = blueprint.streamlets[name]
        lines.append(f"  {inst.role:<9} {name} ({inst.kind})" + ("" if inst.runs else ": read, not run"))
    lines.append("  topics    " + ", ".join([s.topic.name for s in w.fed] + [t.name for t in blueprint.hops()]))
    records = f"{w.total_rate * w.duration_s:,.0f}" if w.duration_s else "until stopped"
    lines.append(
        f"  workload  {w.total_rate:g} records/s for {w.duration_s:g}s ({records} records), {w.keys} keys, "
        f"seed {w.seed}"
    )
    for source in w.sources:
        answering = f", each answering one of {source.partner.of}" if source.partner else ""
        lines.append(
            f"            and {source.topic.name}: {source.rate:g} records/s of them, {source.keys} keys{answering}"
        )
    for rule in scenario.faults:
        when = (
            f"at {rule.start_s:g}s" + (f", every {rule.every_s:g}s" if rule.every_s else "")
            if rule.fault.scheduled
            else "for the whole run"
        )
        params = ", ".join(f"{k}={v}" for k, v in rule.params.items())
        lines.append(f"  fault     {rule.kind} {rule.target} {when}" + (f" ({params})" if params else ""))
    if scenario.storm:
        lines.append(f"  storm     {scenario.storm.faults} faults drawn from the seed")
    from harness.runner.evidence_budget import MARK

    budget = scenario.evidence_budget_bytes
    lines.append(
        f"  evidence  {scenario.recordings}"
        + ("" if budget is None else f", budget {budget / 1e6:,.0f} MB (the workload ends at {MARK:.0%} of it)")
    )
    expected = {k: v for k, v in scenario.expectations.items() if v not in (None, {}, ())}
    lines.append("  expect    " + (", ".join(f"{k}: {v}" for k, v in expected.items()) or "nothing (a verdict only)"))
    return "\n".join(lines)


def print_verdict(report) -> None:
    from harness.checker.counts import COUNTS, VERDICT
    from harness.checker.expect import EXPECTATIONS
    from harness.checker.periods import PERIODS, SOAK_PERIOD_S
    from harness.report.tables import doubt_lines, periods_text

    c = report[COUNTS]
    dropped = f"dropped by design {_n(c.dropped)}, " if c.dropped != 0 else ""
    undelivered = f"undelivered {_n(c.undelivered)}, " if c.undelivered != 0 else ""
    click.echo(
        f"{report.outcome.upper()}  verdict: {report[VERDICT]}  (acked {_n(c.acked)}, lost {_n(c.lost)}, "
        f"{undelivered}{dropped}"
        f"duplicated deliveries {_n(c.duplicated_deliveries)}, duplicated in state {_n(c.duplicated_in_state)}, "
        f"phantom {_n(c.phantom)}, reordered {_n(c.reordered)})"
    )
    if report[PERIODS] is not None and report[PERIODS].length_s >= SOAK_PERIOD_S:
        click.echo(f"periods: {periods_text(report)}")
    for line in doubt_lines(report):
        click.echo(line)
    for gap in report.gaps:
        click.echo(f"partial: {gap}")
    for e in report[EXPECTATIONS]:
        click.echo(f"  {e.status if e.passed else e.status.upper():<7}  {e.name}: {e.detail}")
    counted = {status: sum(e.status == status for e in report[EXPECTATIONS]) for status in ("pass", "fail", "unknown")}
    click.echo(
        f"expectations: {counted['pass']} of {len(report[EXPECTATIONS])} passed"
        + (f", {counted['fail']} failed" if counted["fail"] else "")
        + (f", {counted['unknown']} unknown" if counted["unknown"] else "")
    )
