"""The report's plots, drawn with matplotlib as inline SVG (the HTML needs no network)."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
matplotlib.rcParams["svg.hashsalt"] = "spark-kafka-harness"  # the same ids at each drawing: a report redrawn alike
import matplotlib.pyplot as plt  # noqa: E402

from harness.checker.fault_results import FAULTS  # noqa: E402
from harness.checker.resources import RESOURCE_USE  # noqa: E402
from harness.checker.run_report import Report  # noqa: E402
from harness.checker.timeline import TIMELINE  # noqa: E402

FAULT_PALETTE = (
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#ff7f0e",
    "#17becf",
    "#bcbd22",
    "#2ca02c",
    "#1f77b4",
    "#7f7f7f",
)


def _fault_colors(report: Report) -> dict[str, str]:
    """A color per fault kind of this run, in the order the kinds first appear (the report knows no list of kinds)."""
    kinds = dict.fromkeys(f.kind for f in report[FAULTS])
    return {kind: FAULT_PALETTE[i % len(FAULT_PALETTE)] for i, kind in enumerate(kinds)}


def svg(figure) -> str:
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(figure)
    text = buffer.getvalue()
    return text[text.index("<svg") :]


MARKS = {
    "drivers_started": "drivers start",
    "workload_started": "workload",
    "workload_ended": "workload ends",
    "drained": "drained",
}
TIME_AXIS = "seconds from the workload's start"


def _fault_bands(axes, report: Report) -> None:
    """Every fault its own band, labelled with its number and target (the fault table's numbers)."""
    t0 = report[TIMELINE].get("start_ms", 0)
    end_s = report[TIMELINE].get("duration_s", 0)
    colors = _fault_colors(report)
    for f in report[FAULTS]:
        start = (f.start_ms - t0) / 1000
        end = (f.end_ms - t0) / 1000 if f.end_ms else end_s
        for ax in axes:
            ax.axvspan(start, max(end, start + 0.5), color=colors[f.kind], alpha=0.16, linewidth=0)
        axes[0].annotate(
            f"{f.number} {f.target}",
            xy=(start, 1.0),
            xycoords=("data", "axes fraction"),
            xytext=(1, 2),
            textcoords="offset points",
            fontsize=7,
            rotation=90,
            va="bottom",
            ha="left",
            color=colors[f.kind],
        )


def _phase_marks(axes, report: Report) -> None:
    """Driver start-up, the workload and the drain, as dotted lines on every plot."""
    marks = report[TIMELINE].get("marks", {})
    for row, (name, label) in enumerate(MARKS.items()):
        x = marks.get(name)
        if x is None:
            continue
        for ax in axes:
            ax.axvline(x, color="#444", linestyle=":", linewidth=0.9)
        axes[-1].annotate(
            label,
            xy=(x, 0.0),
            xycoords=("data", "axes fraction"),
            xytext=(2, 2 + 9 * (row % 2)),
            textcoords="offset points",
            fontsize=7,
            color="#444",
        )


def _legend_outside(ax) -> None:
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)


def _fault_legend(ax, report: Report) -> None:
    for kind, color in _fault_colors(report).items():
        ax.axvspan(0, 0, color=color, alpha=0.3, label=kind)


def timeline_svg(report: Report) -> str:
    figure, (top, bottom) = plt.subplots(2, 1, figsize=(11, 5.8), sharex=True)
    for name, series in report[TIMELINE].get("throughput", {}).items():
        top.plot(series["t"], series["rows_per_s"], label=name, drawstyle="steps-post")
    for name, series in report[TIMELINE].get("lag", {}).items():
        bottom.plot(series["t"], series["records"], label=name)
    _fault_bands([top, bottom], report)
    _phase_marks([top, bottom], report)
    _fault_legend(top, report)
    top.set_yscale("symlog", linthresh=10)  # the steady rate stays readable beside catch-up spikes
    top.set_ylim(bottom=0)
    top.set_ylabel("rows read / s (symlog)")
    bottom.set_ylabel("lag (records)")
    bottom.set_xlabel(TIME_AXIS)
    _legend_outside(top)
    _legend_outside(bottom)
    top.set_title("Throughput and lag per streamlet; faults numbered as in the fault table", pad=38)
    return svg(figure)


def anomalies_svg(report: Report) -> str:
    """Lost records and extra copies over time and per source partition; "" when there is none to draw."""
    t = report[TIMELINE]
    drawn = ("lost_over_time", "extra_copies_over_time", "lost_per_partition", "duplicated_per_partition")
    if not any(any(t.get(key, {}).values()) for key in drawn):
        return ""
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 3.4), gridspec_kw={"width_ratios": [3, 1]})
    width = t.get("bin_s", 1)
    for key, label, color in (
        ("lost_over_time", "lost (when sent)", "#d62728"),
        ("extra_copies_over_time", "extra copies (when made)", "#1f77b4"),
    ):
        series = t.get(key, {})
        left.bar(
            [float(k) for k in series],
            list(series.values()),
            width=width,
            label=label,
            color=color,
            alpha=0.7,
            align="edge",
        )
    _fault_bands([left], report)
    _phase_marks([left], report)
    left.set_xlabel(TIME_AXIS)
    left.set_ylabel("records / copies")
    left.set_title("Where in the pipeline's time records were lost and copies made", pad=38)
    _legend_outside(left)
    partitions = sorted(
        {int(p) for p in list(t.get("lost_per_partition", {})) + list(t.get("duplicated_per_partition", {}))}
    )
    lost = [t.get("lost_per_partition", {}).get(p, 0) for p in partitions]
    dup = [t.get("duplicated_per_partition", {}).get(p, 0) for p in partitions]
    right.bar([p - 0.2 for p in partitions], lost, width=0.4, label="lost", color="#d62728")
    right.bar([p + 0.2 for p in partitions], dup, width=0.4, label="duplicated", color="#1f77b4")
    right.set_xticks(partitions)
    right.set_xlabel("source partition")
    right.set_title("Records per source partition")
    _legend_outside(right)
    figure.tight_layout()
    return svg(figure)


def recovery_svg(report: Report) -> str:
    """Each fault's recovery time; "" when none was measured."""
    faults = [(f.number, f) for f in report[FAULTS] if f.recovery_s is not None]
    if not faults:
        return ""
    colors = _fault_colors(report)
    figure, ax = plt.subplots(figsize=(10, 0.6 + 0.35 * len(faults)))
    ax.barh(
        [f"{i} {f.kind} {f.target}" for i, f in faults],
        [f.recovery_s for _, f in faults],
        color=[colors[f.kind] for _, f in faults],
    )
    ax.invert_yaxis()
    ax.set_xlabel("seconds from the fault to the first batch with input after it (or idle: nothing left to read)")
    ax.set_title("Recovery time per fault")
    return svg(figure)


def resources_svg(report: Report) -> str:
    """Memory per process and the run directory's size over the run: a soak's trend lines."""
    use = report[RESOURCE_USE]
    figure, (memory, disk) = plt.subplots(2, 1, figsize=(10, 4.6), sharex=True)
    t = use.series["t_s"]
    nan = float("nan")
    for name, values in use.series["rss_mb"].items():
        memory.plot(t, [nan if v is None else v for v in values], label=name, linewidth=1.2)
    memory.set_ylabel("RSS (MB)")
    memory.set_title("Memory per process (a restart starts a new line segment) and the run directory's size")
    _legend_outside(memory)
    disk.plot(t, use.series["disk_mb"], color="#555", linewidth=1.4)
    disk.set_ylabel("run directory (MB)")
    disk.set_xlabel(TIME_AXIS)
    _fault_bands([memory, disk], report)
    return svg(figure)
