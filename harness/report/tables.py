"""The rows every human-readable report shows (Markdown and HTML render the same tables)."""

from __future__ import annotations

from harness.checker.anomaly_records import RECORDS, WITNESS_TOTALS, WITNESSES
from harness.checker.counts import CAUSES, COUNTS, HOP_FINDINGS, VERDICT
from harness.checker.expect import EXPECTATIONS
from harness.checker.fault_results import FAULTS
from harness.checker.findings import Witness
from harness.checker.latency import LATENCY
from harness.checker.periods import PERIODS
from harness.checker.resources import RESOURCE_USE
from harness.checker.run_report import Report
from harness.checker.timeline import TIMELINE

COUNT_NAMES = (
    "acked",
    "unknown",
    "lost",
    "dropped",
    "duplicated_deliveries",
    "duplicated_in_state",
    "phantom",
    "reordered",
)
UNDELIVERED = "undelivered"  # a column only for a run that did not finish (missing, not proven lost)

EXPECTATION_HEADER = ["", "expectation", "expected", "actual", "detail"]
FAULT_HEADER = [
    "#",
    "kind",
    "target",
    "how",
    "as declared",
    "start (s)",
    "duration (s)",
    "recovery (s)",
    "first output (s)",
    "extra copies made",
    "where",
    "note",
]
WITNESS_HEADER = [
    "anomaly",
    "",
    "key",
    "seq",
    "source",
    "first hop",
    "cause",
    "copies (hop partition@offset, batches, received s, made by fault)",
]


def plain(value) -> str:
    """Any value as a person reads it: no Python reprs (lists joined, mappings as 'key value', None as unknown)."""
    if value is None:
        return "unknown"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ", ".join(plain(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k} {plain(v)}" for k, v in value.items())
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


# The words of a report, in plain words (the README's glossary has the project's others).
GLOSSARY = (
    ("hop", "a place records land: each topic between stages, and each output (an egress's store, a job's topic)"),
    ("lost", "acknowledged by the source, and at no output that should have it"),
    ("dropped", "missing by design: a filter the pipeline declares (keeps, receives, drop_where)"),
    ("duplicated deliveries", "records delivered to an output more than once (a batch written again)"),
    ("duplicated in state", "records an output holds more than once at the end"),
    ("absorbed", "an extra copy delivered but not kept (an upsert, a transaction, a deduplication)"),
    ("phantom", "a record at a hop that the source never sent"),
    ("reordered", "a record delivered after one of the same key with a higher sequence number"),
    (
        "verdict",
        "exactly-once (each once); effectively-exactly-once (none lost or kept twice, some delivered again); "
        "at-least-once (none lost, some kept twice); at-most-once (some lost, none kept twice); none (both)",
    ),
    ("period", "the records sent in one stretch of the run, judged on their own: the trend of a long run"),
    ("unknown", "what the evidence cannot prove either way: never a pass"),
    ("witness", "one concrete record of an anomaly, with every copy of it: where, when, made by which fault"),
)


def count(value) -> str:
    """A count as a reader sees it: thousands separated; one that could not be computed is 'unknown', never 0."""
    return "unknown" if value is None else f"{value:,}" if isinstance(value, int) else str(value)


def expectation_rows(report: Report, marks: dict[str, str]) -> list[list]:
    """`marks`: status (pass, fail, unknown) -> how the first column shows it."""
    return [[marks[e.status], e.name, plain(e.expected), plain(e.actual), e.detail] for e in report[EXPECTATIONS]]


def count_names(report: Report) -> tuple[str, ...]:
    """The counts a hop row shows: undelivered after lost where the run has any."""
    if not report[COUNTS].undelivered and not any(h.counts.undelivered for h in report[HOP_FINDINGS]):
        return COUNT_NAMES
    at = COUNT_NAMES.index("lost") + 1
    return COUNT_NAMES[:at] + (UNDELIVERED,) + COUNT_NAMES[at:]


def hop_header(report: Report) -> list[str]:
    return [
        "hop",
        "verdict",
        *count_names(report),
        "lost first here",
        "duplicated first here",
        "copies",
        "extra copies",
        "made here",
        "inherited",
        "kept in state",
        "absorbed",
    ]


def hop_tables(report: Report, emphasis=str) -> tuple[tuple[list, list], tuple[list, list]]:
    """The hop table in two, to be read at a glance: (header, rows) of each hop's verdict and counts; then of where
    anomalies first appear and the extra copies (made, inherited, kept, absorbed), for those who look further."""
    header, rows = hop_header(report), hop_rows(report, emphasis)
    brief = 2 + len(count_names(report))
    per_hop = rows[:-1]  # the end-to-end row has counts only
    return (header[:brief], [r[:brief] for r in rows]), (
        header[:1] + header[brief:],
        [r[:1] + r[brief:] for r in per_hop],
    )


def hop_rows(report: Report, emphasis=str) -> list[list]:
    """One row per hop, then the end-to-end row (its name and verdict passed through `emphasis`)."""
    names = count_names(report)

    def copy_cells(c) -> list:
        if c is None:
            return [""] * 6
        return [
            count(c.copies),
            count(c.extra),
            count(c.made_here),
            count(c.inherited),
            "" if c.extra_in_state is None else count(c.extra_in_state),
            "" if c.absorbed is None else count(c.absorbed),
        ]

    rows = [
        [
            h.name,
            h.verdict,
            *(count(getattr(h.counts, n)) for n in names),
            h.first_seen["lost"],
            h.first_seen["duplicated"],
            *copy_cells(h.copies),
        ]
        for h in report[HOP_FINDINGS]
    ]
    return rows + [
        [
            emphasis("end to end"),
            emphasis(report[VERDICT]),
            *(count(getattr(report[COUNTS], n)) for n in names),
            "",
            "",
            *[""] * 6,
        ]
    ]


def period_table(report: Report) -> tuple[list, list] | None:
    """The trend: (header, rows) of each period of sending, from when (seconds into the run), its verdict and counts;
    None for a run not cut in periods, or in one only."""
    periods = report[PERIODS]
    if periods is None or len(periods.periods) < 2:
        return None
    t0 = report[TIMELINE].get("start_ms", periods.periods[0].start_ms)
    names = COUNT_NAMES[:3] + ((UNDELIVERED,) if periods.provisional else ()) + COUNT_NAMES[3:]
    rows = [
        [round((p.start_ms - t0) / 1000, 1), p.verdict, *(count(getattr(p.counts, n)) for n in names)]
        for p in periods.periods
    ]
    return ["sent from (s)", "verdict", *names], rows


def periods_text(report: Report) -> str:
    """The trend in a line: how many periods of how long, and how many had each verdict."""
    periods = report[PERIODS]
    verdicts = [p.verdict for p in periods.periods]
    tally = ", ".join(f"{verdicts.count(v)} {v}" for v in dict.fromkeys(verdicts))
    outside = periods.unplaced.acked + periods.unplaced.unknown + periods.unplaced.phantom  # records, not anomalies
    unplaced = f"; {outside:,} record(s) in no period (time unknown)" if outside else ""
    return f"{len(verdicts)} periods of {periods.length_s:,} s by when their records were sent: {tally}{unplaced}" + (
        " (provisional: the run did not finish)" if periods.provisional else ""
    )


def fault_rows(report: Report) -> list[list]:
    t0 = report[TIMELINE].get("start_ms", 0)
    return [
        [
            f.number,
            f.kind,
            f.target,
            ", ".join(f"{k} {plain(v)}" for k, v in f.params.items()),
            f"no, {f.declared}" if f.declared else "yes",
            round((f.start_ms - t0) / 1000, 1),
            round((f.end_ms - f.start_ms) / 1000, 1) if f.end_ms else None,
            f.recovery_s,
            f.output_s,
            count(f.redelivered),
            ", ".join(f"{n:,} at {hop}" for hop, n in f.redelivered_at.items()),
            f.note,
        ]
        for f in report[FAULTS]
    ]


def copies_text(witness: Witness, t0_ms: int = 0) -> str:
    places = []
    for c in witness.copies:
        where = c.hop if c.partition is None else f"{c.hop} p{c.partition}@{c.offset}"
        if c.batches:
            where += " (" + ", ".join(f"{k} batch {v}" for k, v in c.batches.items()) + ")"
        if c.received_ms is not None and t0_ms:
            where += f" at {(c.received_ms - t0_ms) / 1000:.1f}s"
        if c.fault is not None:
            where += f", made by fault {c.fault}'s replay"
        places.append(where)
    return "; ".join(places) or "nowhere"


def witness_line(witness: Witness) -> str:
    """One witness in a line of text (JUnit messages, the console)."""
    source = (
        f" source p{witness.source_partition}@{witness.source_offset}" if witness.source_partition is not None else ""
    )
    return (
        f"{witness.anomaly}: key {plain(witness.key)} seq {plain(witness.seq)}{source}; "
        f"{witness.cause or witness.note or 'cause unknown'}; "
        f"copies: {copies_text(witness)}"
    )


def witness_rows(report: Report) -> list[list]:
    """One row per witness, numbered 'k of N' within its class (N: every record of that class)."""
    t0 = report[TIMELINE].get("start_ms", 0)
    seen: dict[str, int] = {}
    rows = []
    for w in report[WITNESSES]:
        seen[w.anomaly] = seen.get(w.anomaly, 0) + 1
        total = report[WITNESS_TOTALS].get(w.anomaly)
        rows.append(
            [
                w.anomaly,
                f"{seen[w.anomaly]} of {total:,}" if total is not None else seen[w.anomaly],
                plain(w.key),
                plain(w.seq),
                f"p{w.source_partition}@{w.source_offset}" if w.source_partition is not None else "",
                w.first_hop or "",
                w.cause or w.note,
                copies_text(w, t0),
            ]
        )
    return rows


def anomaly_files(report: Report) -> dict[str, str]:
    """The record-set files the report writer saves (harness/report/write.py), relative to the run directory."""
    names = [name for name, table in report[RECORDS].items() if len(table)]
    if "lost" in names:
        names.append("lost-ranges")
    return {name: f"anomalies/{name}.csv" for name in names}


def run_info_text(report: Report) -> str:
    info = report.run_info or {}
    versions = ", ".join(f"{k} {v}" for k, v in (info.get("versions") or {}).items())
    after = info.get("after_faults_s")
    workload = f"{plain(info.get('duration_s'))} s" + (
        "" if after is None else f" and until {plain(after)} s after the last fault"
    )
    return (
        f"seed {plain(info.get('seed'))}, workload {workload}, faults planned {plain(info.get('faults_planned'))}, "
        f"played {plain(info.get('faults_played'))}"
        + (f"; {storm_text(info['storm'])}" if info.get("storm") else "")
        + (f"; {versions}" if versions else "")
    )


def storm_text(storm: dict) -> str:
    """What a storm drew, and the kinds it left out with why."""
    left = "; ".join(f"{kind} ({why})" for kind, why in (storm.get("left_out") or {}).items())
    past = storm.get("past_the_end") or 0
    return (
        f"storm: {plain(storm.get('faults'))} faults drawn from {plain(storm.get('kinds'))}, at most "
        f"{plain(storm.get('max_brokers_down'))} broker(s) down at once"
        + (f"; {past} more drawn past the workload's end, not planned" if past else "")
        + (f"; left out: {left}" if left else "")
    )


def latency_text(report: Report) -> str:
    lat = report[LATENCY]
    share = f"; {lat.restart_share:.0%} of it spent waiting for restarts" if lat.restart_share is not None else ""
    return (
        f"p50 {lat.p50_s:.2f} s, p90 {lat.p90_s:.2f} s, p99 {lat.p99_s:.2f} s, max {lat.max_s:.2f} s "
        f"over {lat.records:,} records{share}"
    )


def retention_text(window: dict) -> str:
    return (
        f"retention shrink on {window['topic']} while {window['streamlet']} was down: {window['acked_in_window']} "
        "acknowledged "
        f"records deleted unread, {window['reached_downstream']} already written downstream, {window['lost']} lost"
    )


def lost_text(report: Report) -> str:
    causes = report[CAUSES]["lost"]
    if any(n is None for n in causes.values()):
        return (
            "unknown (" + ("no egress evidence" if not report[HOP_FINDINGS] else "the causes could not be told") + ")"
        )
    return ", ".join(f"{n:,} {cause}" for cause, n in causes.items() if n) or "none"


def duplicated_text(report: Report) -> str:
    dup = report[CAUSES]["duplicated"]
    if dup.get("replay_after_fault") is None:
        return "unknown (the copies could not be counted)"
    aborted, resent, retried = dup.get("aborted_read"), dup.get("resent_read"), dup.get("retried_read")
    retry = dup.get("producer_retry")
    return (
        f"{dup['replay_after_fault']:,} from a batch replayed after a fault, "
        + (f"{retry:,} written again by a job's producer after a lost produce response, " if retry else "")
        + (f"{aborted:,} read from transactions the source's producer aborted, " if aborted else "")
        + (f"{resent:,} re-sent by the source (the resend fault) and passed on, " if resent else "")
        + (f"{retried:,} written again by the source's producer after a lost produce response, " if retried else "")
        + f"{dup['unexplained']:,} unexplained"
    )


def headers_text(report: Report) -> str | None:
    """Where the source's header went missing (None: not looked for)."""
    looked = [h for h in report[HOP_FINDINGS] if h.headers_lost is not None]
    if not looked:
        return None
    return "the source's header: " + "; ".join(
        f"missing on {h.headers_lost:,} of {h.copies.copies if h.copies else '?':,} copies at {h.name}"
        if h.headers_lost
        else f"on every copy at {h.name}"
        for h in looked
    )


def doubt_lines(report: Report) -> list[str]:
    """Why the outcome is unknown whatever the counts (a fault half done, an undo that never happened, a fault that
    did not strike as declared)."""
    return [f"outcome unknown: {d}" for d in report.doubts + [m.text for m in report.fault_misses]]


def causes_text(report: Report) -> str:
    return f"lost: {lost_text(report)}; duplicated copies: {duplicated_text(report)}"


RESOURCE_HEADER = [
    "process",
    "pid",
    "RSS first (MB)",
    "once warm, first 5 min (MB)",
    "last 5 min (MB)",
    "RSS max (MB)",
    "growth once warm",
]


def resource_rows(report: Report) -> list[list]:
    use = report[RESOURCE_USE]
    if use is None:
        return []
    return [
        [
            p.name,
            p.pid,
            plain(p.first_mb),
            plain(p.warm_mb),
            plain(p.end_mb),
            plain(p.max_mb),
            "not measured (not warm)" if p.growth is None else f"{p.growth:+.1%}",
        ]
        for p in use.processes
    ]


def disk_text(report: Report) -> str:
    use = report[RESOURCE_USE]
    if use is None:
        return "not sampled"
    folders = ", ".join(
        f"{name} {mb:g}" for name, mb in sorted(use.disk_last_by_folder.items(), key=lambda kv: -kv[1]) if mb >= 1
    )
    budget = use.evidence_budget_bytes
    return (
        f"run directory {use.disk_first_mb:g} MiB at the first sample, {use.disk_last_mb:g} MiB at the last, max "
        f"{use.disk_max_mb:g} MiB "
        f"({use.samples} samples over {use.duration_s:g} s)"
        + f"; the evidence (all but the brokers' data) at most {use.evidence_max_bytes / 1e6:,.1f} MB"
        + (f", of its budget of {budget / 1e6:,.1f} MB" if budget is not None else "")
        + (f"; at the end, MiB per folder: {folders}" if folders else "")
    )
