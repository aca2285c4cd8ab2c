"""The rows every human-readable report shows (Markdown and HTML render the same tables)."""

from __future__ import annotations

from harness.checker.findings import Report, Witness

COUNT_NAMES = ("acked", "unknown", "lost", "duplicated_deliveries", "duplicated_in_state", "phantom", "reordered")

EXPECTATION_HEADER = ["", "expectation", "expected", "actual", "detail"]
HOP_HEADER = ["hop", "verdict", *COUNT_NAMES, "lost first here", "duplicated first here", "copies", "extra copies",
              "made here", "inherited", "kept in state", "absorbed"]
FAULT_HEADER = ["#", "kind", "target", "how", "start (s)", "duration (s)", "recovery (s)", "extra copies made", "where", "note"]
WITNESS_HEADER = ["anomaly", "key", "seq", "source", "first hop", "cause", "copies"]


def count(value) -> str:
    """A count as a reader sees it: thousands separated; one that could not be computed is 'unknown', never 0."""
    return "unknown" if value is None else f"{value:,}" if isinstance(value, int) else str(value)


def expectation_rows(report: Report, marks: dict[str, str]) -> list[list]:
    """`marks`: status (pass, fail, unknown) -> how the first column shows it."""
    return [[marks[e.status], e.name, e.expected, "unknown" if e.actual is None else e.actual, e.detail] for e in report.expectations]


def hop_rows(report: Report, emphasis=str) -> list[list]:
    """One row per hop, then the end-to-end row (its name and verdict passed through `emphasis`)."""
    def copy_cells(c) -> list:
        if c is None:
            return [""] * 6
        return [count(c.copies), count(c.extra), count(c.made_here), count(c.inherited),
                "" if c.extra_in_state is None else count(c.extra_in_state), "" if c.absorbed is None else count(c.absorbed)]

    rows = [[h.name, h.verdict, *(count(getattr(h.counts, n)) for n in COUNT_NAMES), h.first_seen["lost"], h.first_seen["duplicated"],
             *copy_cells(h.copies)] for h in report.hops]
    return rows + [[emphasis("end to end"), emphasis(report.verdict), *(count(getattr(report.counts, n)) for n in COUNT_NAMES),
                    "", "", *[""] * 6]]


def fault_rows(report: Report) -> list[list]:
    t0 = report.timeline.get("start_ms", 0)
    return [[i + 1, f.kind, f.target, ", ".join(f"{k}={v}" for k, v in f.params.items()), round((f.start_ms - t0) / 1000, 1),
             round((f.end_ms - f.start_ms) / 1000, 1) if f.end_ms else None, f.recovery_s, count(f.redelivered),
             ", ".join(f"{n:,} at {hop}" for hop, n in f.redelivered_at.items()), f.note] for i, f in enumerate(report.faults)]


def copies_text(witness: Witness) -> str:
    places = []
    for c in witness.copies:
        where = c.hop if c.partition is None else f"{c.hop} p{c.partition}@{c.offset}"
        if c.batches:
            where += " (" + ", ".join(f"{k} batch {v}" for k, v in c.batches.items()) + ")"
        places.append(where)
    return "; ".join(places) or "nowhere"


def witness_line(witness: Witness) -> str:
    """One witness in a line of text (JUnit messages, the console)."""
    source = f" source p{witness.source_partition}@{witness.source_offset}" if witness.source_partition is not None else ""
    return (f"{witness.anomaly}: key {witness.key!r} seq {witness.seq!r}{source}; {witness.cause or witness.note or 'cause unknown'}; "
            f"copies: {copies_text(witness)}")


def witness_rows(report: Report) -> list[list]:
    return [[w.anomaly, w.key, w.seq, f"p{w.source_partition}@{w.source_offset}" if w.source_partition is not None else "",
             w.first_hop, w.cause or w.note, copies_text(w)] for w in report.witnesses]


def retention_text(window: dict) -> str:
    return (f"retention shrink on {window['topic']} while {window['streamlet']} was down: {window['acked_in_window']} acknowledged "
            f"records deleted unread, {window['reached_downstream']} already written downstream, {window['lost']} lost")


def lost_text(report: Report) -> str:
    causes = report.causes["lost"]
    if any(n is None for n in causes.values()):
        return "unknown (no egress evidence)"
    return ", ".join(f"{n:,} {cause}" for cause, n in causes.items() if n) or "none"


def causes_text(report: Report) -> str:
    dup = report.causes["duplicated"]
    return (f"lost: {lost_text(report)}; duplicated copies: {dup['replay_after_fault']:,} from a batch replayed after a fault, "
            f"{dup['unexplained']:,} unexplained")
