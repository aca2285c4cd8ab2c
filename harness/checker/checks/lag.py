"""How far behind its inputs each streamlet fell: the records in its input topics past its last committed end
offsets, at each offset sample the runner took (about one a second; the timeline's lag), the most and when, and at
the last sample. `max_lag` fails a run in which a streamlet fell further behind than it allows (a soak's "it keeps
up"); a streamlet never sampled is unknown, never a pass."""

from __future__ import annotations

from harness.checker.expectations.kind import ExpectationKind, Found, at_most_each
from harness.checker.expectations.result import ExpectationResult
from harness.checker.section import Section
from harness.checker.step import Context, Step
from harness.checker.timeline import TIMELINE

HEADER = ("streamlet", "samples", "most records behind", "at (s)", "behind at the last sample")
NAME = "max_lag"


def _row(name: str, series: dict) -> tuple:
    behind, times = series["records"], series["t"]
    if not behind:
        return (name, 0, None, None, None)
    most = max(range(len(behind)), key=behind.__getitem__)
    return (name, len(behind), behind[most], times[most], behind[-1])


def _section(context: Context) -> Section | None:
    lag = context[TIMELINE].get("lag", {})
    rows = tuple(_row(name, lag.get(name, {"t": [], "records": []})) for name in context.evidence.progress)
    if not rows:
        return None
    lines = ("records in each streamlet's input topics past its last committed offsets, at each offset sample",)
    return Section("Consumer lag", lines, HEADER, rows, data={"most_behind": {row[0]: row[2] for row in rows}})


def _judge(limit: int, found: Found) -> list[ExpectationResult]:
    section = found.sections.get("lag")
    most = section.data["most_behind"] if section is not None else {}
    return [at_most_each(NAME, limit, most, "records behind", " records")]


MAX_LAG = ExpectationKind(
    NAME, "no streamlet fell more than this many records behind its inputs", (int,), _judge, rank=95, minimum=0
)
KIND = Step("lag", section=_section, needs=(TIMELINE,), expectations=(MAX_LAG,))
