"""The `expectations` section: what the run must show for the scenario to pass.

    expectations:
      end_to_end: effectively-exactly-once   # this guarantee or a stronger one
      per_hop: {processed: exactly-once}     # per intermediate topic (blueprint topic name) or egress streamlet
      max_lost: 0
      lost_causes: [retention]               # every lost record explained by one of these
      min_duplicated_deliveries: 1           # the faults must have shown re-deliveries
      query_failure: data-loss               # a query must stop with Spark's data-loss error
      max_recovery_s: 120                    # every fault recovered within this
      max_memory_growth: 0.10                # no process's RSS grew more than 10% once warm (soaks)

Guarantees are ordered: exactly-once > effectively-exactly-once > at-least-once > none,
and exactly-once > at-most-once > none. "At least at-least-once" is met by the
three stronger-or-equal ones, never by at-most-once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.scenario.fields import Fields
from harness.scenario.blueprint import Blueprint, BlueprintError

GUARANTEES = ("exactly-once", "effectively-exactly-once", "at-least-once", "at-most-once", "none")
LOSS_CAUSES = ("retention", "watermark", "redeploy")
QUERY_FAILURES = ("data-loss", "none")

# What each guarantee implies (itself included).
IMPLIES = {
    "exactly-once": set(GUARANTEES),
    "effectively-exactly-once": {"effectively-exactly-once", "at-least-once", "none"},
    "at-least-once": {"at-least-once", "none"},
    "at-most-once": {"at-most-once", "none"},
    "none": {"none"},
}


def satisfies(verdict: str, required: str) -> bool:
    """Is `verdict` the `required` guarantee or a stronger one?"""
    return required in IMPLIES[verdict]


@dataclass(frozen=True)
class Expectations:
    end_to_end: str | None = None
    per_hop: dict = field(default_factory=dict)  # blueprint topic name -> guarantee
    max_lost: int | None = None
    lost_causes: tuple[str, ...] | None = None
    min_duplicated_deliveries: int | None = None
    query_failure: str | None = None
    max_recovery_s: float | None = None
    max_memory_growth: float | None = None  # a fraction: 0.10 is 10%


def _guarantee(value: Any, path: str) -> str:
    if value not in GUARANTEES:
        raise BlueprintError(path, f"expected one of {', '.join(GUARANTEES)}, got {value!r}")
    return value


def parse_expectations(raw: Any, blueprint: Blueprint) -> Expectations:
    f = Fields(raw, "expectations", {"end_to_end", "per_hop", "max_lost", "lost_causes", "min_duplicated_deliveries",
                                     "query_failure", "max_recovery_s", "max_memory_growth"})
    end_to_end = f.get("end_to_end", str)
    if end_to_end is not None:
        _guarantee(end_to_end, "expectations.end_to_end")
    hops = {t.name for t in blueprint.hops()} | {s.name for s in blueprint.streamlets.values() if s.kind == "egress"}
    per_hop = {}
    for topic, guarantee in f.get("per_hop", dict, {}).items():
        path = f"expectations.per_hop.{topic}"
        if topic not in hops:
            raise BlueprintError(path, f"unknown hop {topic!r} (intermediate topics and egresses: {', '.join(sorted(hops))})")
        per_hop[topic] = _guarantee(guarantee, path)
    causes = f.get("lost_causes", list)
    for index, cause in enumerate(causes or []):
        if cause not in LOSS_CAUSES:
            raise BlueprintError(f"expectations.lost_causes[{index}]", f"expected one of {', '.join(LOSS_CAUSES)}, got {cause!r}")
    return Expectations(
        end_to_end=end_to_end,
        per_hop=per_hop,
        max_lost=f.get("max_lost", int, minimum=0),
        lost_causes=tuple(causes) if causes is not None else None,
        min_duplicated_deliveries=f.get("min_duplicated_deliveries", int, minimum=0),
        query_failure=f.choice("query_failure", QUERY_FAILURES),
        max_recovery_s=f.number("max_recovery_s", minimum=0),
        max_memory_growth=f.number("max_memory_growth", minimum=0),
    )
