"""report.md: the summary a person reads in a CI log or a pull request."""

from __future__ import annotations

from harness.checker.findings import Report

COUNT_NAMES = ("acked", "unknown", "lost", "duplicated_deliveries", "duplicated_in_state", "phantom", "reordered")


def _table(header: list[str], rows: list[list]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return lines + ["| " + " | ".join("" if v is None else str(v) for v in row) + " |" for row in rows]


def _copies(witness) -> str:
    places = []
    for c in witness.copies:
        where = f"{c.hop}"
        if c.partition is not None:
            where += f" p{c.partition}@{c.offset}"
        if c.batches:
            where += " (" + ", ".join(f"{k} batch {v}" for k, v in c.batches.items()) + ")"
        places.append(where)
    return "; ".join(places) or "nowhere"


def render_markdown(report: Report) -> str:
    passed = sum(e.passed for e in report.expectations)
    lines = [f"# {report.scenario}: {report.verdict}", ""]
    if report.description:
        lines += [report.description, ""]
    lines += [f"- run: `{report.run_dir}` ({report.status})",
              f"- expectations: {passed} of {len(report.expectations)} passed" + ("" if report.passed else " - **FAILED**")]
    if report.gaps:
        lines += ["- **partial report**, evidence missing or unreadable:"] + [f"  - {g}" for g in report.gaps]
    lines += [""]
    if report.expectations:
        lines += ["## Expectations", ""] + _table(["", "expectation", "expected", "actual", "detail"], [
            ["pass" if e.passed else "**FAIL**", e.name, e.expected, e.actual, e.detail] for e in report.expectations]) + [""]
    lines += ["## Counts per hop", ""] + _table(
        ["hop", "verdict"] + list(COUNT_NAMES) + ["lost first here", "duplicated first here"],
        [[h.name, h.verdict] + [getattr(h.counts, n) for n in COUNT_NAMES] + [h.first_seen["lost"], h.first_seen["duplicated"]]
         for h in report.hops] + [["**end to end**", f"**{report.verdict}**"] + [getattr(report.counts, n) for n in COUNT_NAMES] + ["", ""]]) + [""]
    lost = report.causes["lost"]
    dup = report.causes["duplicated"]
    lines += ["## Causes", "",
              "- lost: " + (", ".join(f"{n} {c}" for c, n in lost.items() if n) or "none"),
              f"- duplicated copies: {dup['replay_after_fault']} from a batch replayed after a fault, {dup['unexplained']} unexplained"]
    if lost.get("unexplained"):
        lines.append(f"- **{lost['unexplained']} lost record(s) UNEXPLAINED**")
    for w in report.retention:
        lines.append(f"- retention shrink on {w['topic']} while {w['streamlet']} was down: {w['acked_in_window']} acknowledged records "
                     f"deleted unread, {w['reached_downstream']} had already been written downstream, {w['lost']} lost - "
                     + ("the lost set is exactly the deleted range" if w["exact"] else "**the lost set differs from the deleted range**"))
    for f in report.query_failures:
        lines.append(f"- {f['streamlet']}'s query failed: {f['error'].splitlines()[0][:300] if f['error'] else '(no message)'}")
    if report.windows:
        w = report.windows
        lines.append(f"- windows: {w.windows} counted, {w.exact} exact, {w.under_counted} under-counted, {w.over_counted} over-counted, "
                     f"{w.phantom} phantom, {w.still_open} still open; {w.records_dropped_by_watermark} record(s) dropped behind the watermark")
    lines += [""]
    if report.faults:
        lines += ["## Faults", ""] + _table(["kind", "target", "start (s)", "duration (s)", "recovery (s)", "re-delivered", "note"], [
            [f.kind, f.target, round((f.start_ms - report.timeline.get("start_ms", f.start_ms)) / 1000, 1),
             round((f.end_ms - f.start_ms) / 1000, 1) if f.end_ms else None, f.recovery_s, f.redelivered, f.note]
            for f in report.faults]) + [""]
    lat = report.latency
    if lat.records:
        lines += ["## Latency (event time at the source -> arrival at the egress)", "",
                  f"p50 {lat.p50_ms:.0f} ms, p90 {lat.p90_ms:.0f} ms, p99 {lat.p99_ms:.0f} ms, max {lat.max_ms:.0f} ms over {lat.records:,} records", ""]
    if report.witnesses:
        lines += ["## Witnesses", ""] + _table(["anomaly", "key", "seq", "source", "first hop", "cause", "copies"], [
            [w.anomaly, w.key, w.seq, f"p{w.source_partition}@{w.source_offset}" if w.source_partition is not None else "",
             w.first_hop, w.cause or w.note, _copies(w)] for w in report.witnesses]) + [""]
    return "\n".join(lines)
