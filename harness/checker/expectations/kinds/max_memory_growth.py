"""max_memory_growth: no process's memory grew more than this fraction once warm (soaks)."""

from harness.checker.expectations.kind import ExpectationKind, Found
from harness.checker.expectations.result import FAIL, PASS, UNKNOWN, ExpectationResult

NAME = "max_memory_growth"


def _judge(limit: float, found: Found) -> list:
    """Fail if any process grew more than `limit` once warm; unknown if no growth could be measured."""
    resources = found.resources
    if resources is None:
        return [
            ExpectationResult(NAME, limit, None, UNKNOWN, "memory growth: unknown (no resource samples in the history)")
        ]
    worst = resources.max_growth
    if worst is None:
        warm = resources.warmup_s / 60
        detail = f"memory growth: unknown (no process ran 10 minutes past its {warm:g}-minute warm-up)"
        return [ExpectationResult(NAME, limit, None, UNKNOWN, detail)]
    grown = [
        f"{p.name} {p.growth:+.1%} ({p.warm_mb:g} -> {p.end_mb:g} MB, medians)"
        for p in resources.processes
        if p.growth is not None and p.growth > limit
    ]
    if grown:
        return [ExpectationResult(NAME, limit, worst, FAIL, "grew once warm: " + "; ".join(grown))]
    detail = f"largest growth once warm {worst:+.1%}, at most {limit:+.0%} allowed"
    return [ExpectationResult(NAME, limit, worst, PASS, detail)]


KIND = ExpectationKind(
    NAME,
    "no process's memory grew more than this fraction once warm (0.10: 10%)",
    (int, float),
    _judge,
    rank=90,
    read=lambda value, scope: float(value),
    minimum=0,
    fault_free=True,
)
