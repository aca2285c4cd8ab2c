"""The report's plots, drawn with matplotlib as inline SVG (the HTML needs no network)."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from harness.checker.findings import Report  # noqa: E402

FAULT_COLORS = {"kill-driver": "#d62728", "executor-crash": "#9467bd", "broker-kill": "#8c564b", "broker-pause": "#e377c2",
                "retention-shrink": "#ff7f0e", "redeploy": "#17becf", "late-events": "#bcbd22"}


def svg(figure) -> str:
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight")
    plt.close(figure)
    text = buffer.getvalue()
    return text[text.index("<svg"):]


def _fault_bands(axes, report: Report) -> None:
    t0 = report.timeline.get("start_ms", 0)
    end_s = report.timeline.get("duration_s", 0)
    labelled = set()
    for f in report.faults:
        start = (f.start_ms - t0) / 1000
        end = (f.end_ms - t0) / 1000 if f.end_ms else end_s
        label = f.kind if f.kind not in labelled else None
        labelled.add(f.kind)
        for ax in axes:
            ax.axvspan(start, max(end, start + 0.5), color=FAULT_COLORS.get(f.kind, "#7f7f7f"), alpha=0.18, label=label if ax is axes[0] else None)


def timeline_svg(report: Report) -> str:
    figure, (top, bottom) = plt.subplots(2, 1, figsize=(10, 5.5), sharex=True)
    for name, series in report.timeline.get("throughput", {}).items():
        top.plot(series["t"], series["rows_per_s"], label=name, drawstyle="steps-post")
    for name, series in report.timeline.get("lag", {}).items():
        bottom.plot(series["t"], series["records"], label=name)
    _fault_bands([top, bottom], report)
    top.set_ylabel("rows read / s")
    bottom.set_ylabel("lag (records)")
    bottom.set_xlabel("seconds since the run began")
    top.legend(loc="upper right", fontsize=8, ncol=2)
    bottom.legend(loc="upper right", fontsize=8)
    top.set_title("Throughput and lag per streamlet, faults shaded")
    return svg(figure)


def anomalies_svg(report: Report) -> str:
    t = report.timeline
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 3.2))
    width = t.get("bin_s", 1)
    for key, label, color in (("lost_over_time", "lost", "#d62728"), ("duplicated_over_time", "duplicated", "#1f77b4")):
        series = t.get(key, {})
        left.bar([float(k) for k in series], list(series.values()), width=width, label=label, color=color, alpha=0.7, align="edge")
    _fault_bands([left], report)
    left.set_xlabel("source time (s since the run began)")
    left.set_ylabel("records")
    left.set_title("Lost and duplicated records over time")
    left.legend(fontsize=8)
    partitions = sorted({int(p) for p in list(t.get("lost_per_partition", {})) + list(t.get("duplicated_per_partition", {}))})
    lost = [t.get("lost_per_partition", {}).get(p, 0) for p in partitions]
    dup = [t.get("duplicated_per_partition", {}).get(p, 0) for p in partitions]
    right.bar([p - 0.2 for p in partitions], lost, width=0.4, label="lost", color="#d62728")
    right.bar([p + 0.2 for p in partitions], dup, width=0.4, label="duplicated", color="#1f77b4")
    right.set_xticks(partitions)
    right.set_xlabel("source partition")
    right.set_title("Per source partition")
    right.legend(fontsize=8)
    return svg(figure)


def recovery_svg(report: Report) -> str:
    faults = [f for f in report.faults if f.recovery_s is not None]
    figure, ax = plt.subplots(figsize=(10, 0.5 + 0.35 * max(len(faults), 1)))
    labels = [f"{i + 1}. {f.kind} {f.target}" for i, f in enumerate(faults)]
    ax.barh(labels, [f.recovery_s for f in faults], color=[FAULT_COLORS.get(f.kind, "#7f7f7f") for f in faults])
    ax.invert_yaxis()
    ax.set_xlabel("seconds from the fault to the first batch with input after it")
    ax.set_title("Recovery time per fault")
    return svg(figure)
