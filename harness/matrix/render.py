"""The matrix's report: one grid, rows by columns, each cell the verdict its runs saw (and whether they agreed),
what was lost, the extra copies, the slowest recovery and what the guarantee cost (throughput until drained,
latency p50 and p99, from the same runs), with a link to every run's own report.

matrix.html is self-contained (inline CSS, no network); matrix.md is the same grid for a README or a wiki; the
cells also go into matrix.json for machines.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from html import escape

from harness.matrix.state import MatrixState, RunResult
from harness.report.html import STYLE

# A matrix is a map of guarantees: its cells are colored by how strong each is (a run's report colors its outcome).
VERDICT_COLORS = {
    "exactly-once": "#2ca02c",
    "effectively-exactly-once": "#2ca02c",
    "at-least-once": "#ff7f0e",
    "at-most-once": "#d62728",
    "none": "#d62728",
    "unknown": "#7f7f7f",
}

NOT_RUN = "not run"


@dataclass(frozen=True)
class CellSummary:
    row: str
    column: str
    runs: int
    repeats: int
    verdicts: list[str]  # distinct, strongest evidence first: in the order the runs saw them
    agreed: bool  # every planned run finished and saw the same verdict
    lost: list[int | None]  # per run, None: could not be computed
    duplicated_deliveries: list[int | None]
    extra_kept: list[int | None]
    extra_absorbed: list[int | None]
    recovery_max_s: float | None  # over the runs (None: none measured)
    recovery_unmeasured: int
    failed_runs: int  # runs that could not complete
    outcomes: list[str]  # per run: its expectations' outcome (pass | fail | unknown)
    links: list[tuple[int, str]]  # (seed, the run's report.html, relative to the matrix folder)
    # what the guarantee cost, per run (None: not measured): records/s until drained, latency p50 and p99
    records_per_s: list[float | None]
    latency_p50_s: list[float | None]
    latency_p99_s: list[float | None]

    @property
    def verdict(self) -> str:
        if not self.runs:
            return NOT_RUN
        return self.verdicts[0] if len(self.verdicts) == 1 else "varies"


def summarize(state: MatrixState) -> list[CellSummary]:
    cells = []
    for row in state.rows:
        for column in state.columns:
            runs = sorted((r for r in state.runs if r.row == row and r.column == column), key=lambda r: r.seed)
            verdicts = list(dict.fromkeys(r.verdict for r in runs))
            measured = [r.recovery_max_s for r in runs if r.recovery_max_s is not None]
            cells.append(
                CellSummary(
                    row,
                    column,
                    len(runs),
                    len(state.seeds),
                    verdicts,
                    len(runs) == len(state.seeds) and len(verdicts) == 1,
                    [r.lost for r in runs],
                    [r.duplicated_deliveries for r in runs],
                    [r.extra_kept for r in runs],
                    [r.extra_absorbed for r in runs],
                    max(measured) if measured else None,
                    sum(r.recovery_unmeasured for r in runs),
                    sum(r.status != "complete" for r in runs),
                    [r.outcome for r in runs],
                    [(r.seed, f"{r.run_dir}/report.html") for r in runs],
                    [r.records_per_s for r in runs],
                    [r.latency_p50_s for r in runs],
                    [r.latency_p99_s for r in runs],
                )
            )
    return cells


def cells_json(state: MatrixState) -> list[dict]:
    return [{**asdict(c), "verdict": c.verdict} for c in summarize(state)]


def _span(values: list[int | None]) -> str:
    """The values of a cell's runs: one number when they agree, low-high when not, unknown if any is."""
    if not values:
        return "-"
    if None in values:
        return "unknown"
    low, high = min(values), max(values)
    return f"{low:,}" if low == high else f"{low:,}-{high:,}"


def _span_of(values: list[float | None], unit: str) -> str:
    """Measured figures of a cell's runs, as _span: one when they agree to the shown precision, else low-high."""
    if not values or None in values:
        return "unknown"
    low, high = (f"{v:,.0f}" if v >= 10 else f"{v:.1f}" for v in (min(values), max(values)))
    return f"{low} {unit}" if low == high else f"{low}-{high} {unit}"


def _cost(cell: CellSummary) -> str:
    """What the guarantee cost in the same runs: throughput until drained, and latency to the egress."""
    return (
        f"throughput {_span_of(cell.records_per_s, 'records/s')}, latency p50 {_span_of(cell.latency_p50_s, 's')}, "
        f"p99 {_span_of(cell.latency_p99_s, 's')}"
    )


def _agreement(cell: CellSummary) -> str:
    if not cell.runs:
        return NOT_RUN
    if cell.runs < cell.repeats:
        return f"{cell.runs} of {cell.repeats} runs so far"
    return f"{cell.runs} of {cell.runs} agree" if cell.agreed else "runs differ: " + ", ".join(cell.verdicts)


def _recovery(cell: CellSummary) -> str:
    text = "-" if cell.recovery_max_s is None else f"<= {cell.recovery_max_s:.0f} s"
    return text + (f" ({cell.recovery_unmeasured} unmeasured)" if cell.recovery_unmeasured else "")


def _notes(cell: CellSummary) -> list[str]:
    notes = []
    if cell.failed_runs:
        notes.append(f"{cell.failed_runs} run(s) could not complete")
    if any(o != "pass" for o in cell.outcomes):
        notes.append("expectations: " + ", ".join(cell.outcomes))
    return notes


def differences(state: MatrixState) -> list[str]:
    """Where the guarantee differs: each row whose cells saw different verdicts across the columns (with Spark
    versions as columns, where an upgrade changes what the pipeline guarantees)."""
    cells = {(c.row, c.column): c for c in summarize(state)}
    found = []
    for row in state.rows:
        seen = [(column, cells[(row, column)].verdict) for column in state.columns if cells[(row, column)].runs]
        if len({verdict for _, verdict in seen}) > 1:
            found.append(f"{row}: " + "; ".join(f"{column} {verdict}" for column, verdict in seen))
    return found


def _per_run(state: MatrixState, attribute: str, key: str) -> str:
    """The versions the runs had (each run's `attribute`), or the first run's `key` in a state from before them."""
    seen = list(dict.fromkeys(getattr(r, attribute) for r in state.runs if getattr(r, attribute)))
    return ", ".join(seen) if seen else str(state.versions.get(key, "-"))


PER_RUN = ("pyspark", "spark_kafka_connector", "spark_environment", "kafka_broker", "kafka_cluster")


def _header(state: MatrixState) -> list[tuple[str, str]]:
    versions = {k: v for k, v in state.versions.items() if k not in PER_RUN and not isinstance(v, dict | None)}
    runs = len(state.rows) * len(state.columns) * len(state.seeds)
    return [
        ("started", state.started),
        (
            "runs",
            f"{len(state.runs)} of {runs}" + ("" if state.finished else " (not finished: the same command resumes it)"),
        ),
        ("time running", f"{state.elapsed_s / 60:.0f} min"),
        ("seeds per cell", ", ".join(map(str, state.seeds))),
        ("workload per run", "the scenario's" if state.duration_s is None else f"{state.duration_s:g} s"),
        ("Spark (the drivers')", _per_run(state, "spark", "pyspark")),
        ("Kafka (the brokers')", _per_run(state, "kafka", "kafka_broker")),
        ("versions", ", ".join(f"{k} {v}" for k, v in versions.items()) or "-"),
        (
            "machine",
            f"{state.machine.get('cpus')} CPUs, {state.machine.get('memory_gib')} GiB, {state.machine.get('system')}",
        ),
    ]


def render_markdown(state: MatrixState) -> str:
    cells = {(c.row, c.column): c for c in summarize(state)}
    lines = [f"# Matrix {state.name}", ""]
    if state.description:
        lines += [state.description.strip(), ""]
    lines += [f"- {k}: {v}" for k, v in _header(state)] + [""]
    lines += ["| | " + " | ".join(state.columns) + " |", "|---" * (len(state.columns) + 1) + "|"]
    for row in state.rows:
        entries = []
        for column in state.columns:
            c = cells[(row, column)]
            if not c.runs:
                entries.append(NOT_RUN)
                continue
            parts = [
                f"**{c.verdict}**",
                _agreement(c),
                f"lost {_span(c.lost)}",
                f"extra copies kept {_span(c.extra_kept)}, absorbed {_span(c.extra_absorbed)}",
                f"recovery {_recovery(c)}",
                _cost(c),
            ] + _notes(c)
            parts.append(" ".join(f"[seed {seed}]({link})" for seed, link in c.links))
            entries.append("<br>".join(parts))
        lines.append(f"| **{row}** | " + " | ".join(entries) + " |")
    lines += ["", "## Where the guarantee differs", ""] + (
        [f"- {d}" for d in differences(state)] or ["The same verdict in every column of each row."]
    )
    lines += ["", "## Runs", "", "| " + " | ".join(RUN_HEADER) + " |", "|---" * len(RUN_HEADER) + "|"]
    lines += ["| " + " | ".join(_run_cells(r) + [f"[report]({r.run_dir}/report.html)"]) + " |" for r in state.runs]
    return "\n".join(lines) + "\n"


def _n(value: int | None) -> str:
    return "unknown" if value is None else f"{value:,}"


RUN_HEADER = [
    "row",
    "column",
    "seed",
    "Spark",
    "verdict",
    "acked",
    "lost",
    "duplicated deliveries",
    "extra kept",
    "absorbed",
    "faults",
    "slowest recovery (s)",
    "records/s",
    "latency p50 (s)",
    "latency p99 (s)",
    "time (s)",
    "report",
]


def _run_cells(r: RunResult) -> list[str]:
    """One run's line of the runs table, without its link (every column of RUN_HEADER but the last)."""
    return [
        r.row,
        r.column,
        str(r.seed),
        r.spark or "-",
        r.verdict,
        _n(r.acked),
        _n(r.lost),
        _n(r.duplicated_deliveries),
        _n(r.extra_kept),
        _n(r.extra_absorbed),
        str(r.faults_played),
        "-" if r.recovery_max_s is None else f"{r.recovery_max_s:.1f}",
        "unknown" if r.records_per_s is None else f"{r.records_per_s:,.0f}",
        "unknown" if r.latency_p50_s is None else f"{r.latency_p50_s:.2f}",
        "unknown" if r.latency_p99_s is None else f"{r.latency_p99_s:.2f}",
        f"{r.elapsed_s:.0f}",
    ]


def _cell_html(c: CellSummary) -> str:
    if not c.runs:
        return f"<td class='empty'>{NOT_RUN}</td>"
    colors = [VERDICT_COLORS.get(v, "#7f7f7f") for v in c.verdicts]
    badges = " ".join(
        f"<span class='badge' style='background:{color}'>{escape(v)}</span>" for v, color in zip(c.verdicts, colors)
    )
    lines = [
        badges,
        escape(_agreement(c)),
        f"lost {escape(_span(c.lost))}",
        f"extra copies: kept {escape(_span(c.extra_kept))}, absorbed {escape(_span(c.extra_absorbed))}",
        f"recovery {escape(_recovery(c))}",
        escape(_cost(c)),
    ] + [f"<b>{escape(n)}</b>" for n in _notes(c)]
    lines.append(" ".join(f"<a href='{escape(link)}'>seed {seed}</a>" for seed, link in c.links))
    return "<td>" + "<br>".join(lines) + "</td>"


def render_html(state: MatrixState) -> str:
    cells = {(c.row, c.column): c for c in summarize(state)}
    head = "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in _header(state))
    grid = "<tr><th></th>" + "".join(f"<th>{escape(c)}</th>" for c in state.columns) + "</tr>"
    for row in state.rows:
        grid += (
            f"<tr><th>{escape(row)}</th>"
            + "".join(_cell_html(cells[(row, column)]) for column in state.columns)
            + "</tr>"
        )
    runs = "".join(
        "<tr>"
        + "".join(f"<td>{escape(v)}</td>" for v in _run_cells(r))
        + f"<td><a href='{escape(r.run_dir)}/report.html'>report</a></td></tr>"
        for r in state.runs
    )
    run_head = "".join(f"<th>{escape(h)}</th>" for h in RUN_HEADER)
    description = f"<p>{escape(state.description)}</p>" if state.description else ""
    found = differences(state)
    differs = (
        ("<ul>" + "".join(f"<li>{escape(d)}</li>" for d in found) + "</ul>")
        if found
        else "<p>The same verdict in every column of each row.</p>"
    )
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>Matrix {escape(state.name)}</title>"
        f"<style>{STYLE}.grid td{{vertical-align:top;min-width:170px}}.empty{{color:#999}}</style></head><body>"
        f"<h1>Matrix {escape(state.name)}</h1>{description}<table>{head}</table>"
        f"<table class='grid'>{grid}</table><h2>Where the guarantee "
        f"differs</h2>{differs}<h2>Runs</h2><table><tr>{run_head}</tr>{runs}</table></body></html>"
    )
