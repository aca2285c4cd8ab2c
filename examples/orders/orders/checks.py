"""A check of the team's own, named by its scenario (checks: [orders.checks:LONGEST_BATCH]): the longest micro-batch
each streamlet ran, from its query events, and the expectation the team gates on, max_batch_s: no batch of any
streamlet may take longer (their latency promise). A streamlet with no timed batch is unknown, never a pass."""

from harness.checker.expectations.kind import ExpectationKind, Found, at_most_each
from harness.checker.expectations.result import ExpectationResult
from harness.checker.section import Section
from harness.checker.step import Context, Step


def _longest_s(events: list[dict]) -> float | None:
    took = [
        e["progress"]["durationMs"]["triggerExecution"]
        for e in events
        if e.get("event") == "progress"
        and isinstance((e["progress"].get("durationMs") or {}).get("triggerExecution"), int)
    ]
    return max(took) / 1000 if took else None


def _section(context: Context) -> Section:
    longest = {name: _longest_s(events) for name, events in context.evidence.progress.items()}
    rows = tuple((name, s) for name, s in longest.items())
    return Section("Longest micro-batch", (), ("streamlet", "longest batch (s)"), rows, data={"longest_s": longest})


def _judge(limit: float, found: Found) -> list[ExpectationResult]:
    section = found.sections.get("longest_batch")
    longest = section.data["longest_s"] if section is not None else {}
    return [at_most_each("max_batch_s", limit, longest, "longest batch", "s")]


MAX_BATCH_S = ExpectationKind(
    "max_batch_s", "no micro-batch took longer than this many seconds", (int, float), _judge, rank=200, minimum=0
)
LONGEST_BATCH = Step("longest_batch", section=_section, expectations=(MAX_BATCH_S,))
