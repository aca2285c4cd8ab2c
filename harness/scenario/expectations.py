"""The `expectations` section: what the run must show for the scenario to pass.

    expectations:
      end_to_end: effectively-exactly-once   # this guarantee or a stronger one
      verdict: at-most-once                  # exactly this end-to-end verdict (a caveat that must show)
      per_hop: {processed: exactly-once}     # per intermediate topic (blueprint topic name) or egress streamlet
      max_lost: 0
      lost_causes: [retention]               # every lost record explained by one of these
      min_duplicated_deliveries: 1           # the faults must have shown re-deliveries
      query_failure: data-loss               # a query must stop with Spark's data-loss error
      max_recovery_s: 120                    # every fault recovered within this
      max_memory_growth: 0.10                # no process's RSS grew more than 10% once warm (soaks)
      headers_kept: true                     # every copy at every topic has the source's header (workload.headers)

The guarantees and their order are harness.semantics'; the validated result is the run directory's
Expectations (harness/evidence/description.py), which the checker reads.
"""

from __future__ import annotations

from typing import Any

from contract.roles import EGRESS
from harness.evidence.description import Expectations
from harness.scenario.blueprint import Blueprint, BlueprintError
from harness.scenario.fields import Fields
from harness.semantics import EXPECTABLE_CAUSES, GUARANTEES

QUERY_FAILURES = ("data-loss", "none")


def _guarantee(value: Any, path: str) -> str:
    if value not in GUARANTEES:
        raise BlueprintError(path, f"expected one of {', '.join(GUARANTEES)}, got {value!r}")
    return value


def parse_expectations(raw: Any, blueprint: Blueprint) -> Expectations:
    f = Fields(
        raw,
        "expectations",
        {
            "end_to_end",
            "verdict",
            "per_hop",
            "max_lost",
            "lost_causes",
            "min_duplicated_deliveries",
            "query_failure",
            "max_recovery_s",
            "max_memory_growth",
            "headers_kept",
        },
    )
    end_to_end = f.get("end_to_end", str)
    if end_to_end is not None:
        _guarantee(end_to_end, "expectations.end_to_end")
    exact = f.get("verdict", str)
    if exact is not None:
        _guarantee(exact, "expectations.verdict")
    hops = {t.name for t in blueprint.hops()} | {s.name for s in blueprint.streamlets.values() if s.role == EGRESS}
    per_hop = {}
    for topic, guarantee in f.get("per_hop", dict, {}).items():
        path = f"expectations.per_hop.{topic}"
        if topic not in hops:
            raise BlueprintError(
                path, f"unknown hop {topic!r} (intermediate topics and egresses: {', '.join(sorted(hops))})"
            )
        per_hop[topic] = _guarantee(guarantee, path)
    causes = f.get("lost_causes", list)
    for index, cause in enumerate(causes or []):
        if cause not in EXPECTABLE_CAUSES:
            raise BlueprintError(
                f"expectations.lost_causes[{index}]", f"expected one of {', '.join(EXPECTABLE_CAUSES)}, got {cause!r}"
            )
    return Expectations(
        end_to_end=end_to_end,
        verdict=exact,
        per_hop=per_hop,
        max_lost=f.get("max_lost", int, minimum=0),
        lost_causes=tuple(causes) if causes is not None else None,
        min_duplicated_deliveries=f.get("min_duplicated_deliveries", int, minimum=0),
        query_failure=f.choice("query_failure", QUERY_FAILURES),
        max_recovery_s=f.number("max_recovery_s", minimum=0),
        max_memory_growth=f.number("max_memory_growth", minimum=0),
        headers_kept=f.get("headers_kept", bool),
    )
