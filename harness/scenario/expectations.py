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

Each is a kind of harness/checker/expectations/kinds/, which reads its value here and judges it in the checker;
the values read are what pipeline.json keeps (harness/evidence/description.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from contract.roles import EGRESS
from harness.checker.expectations.kind import Invalid, Scope, builtin
from harness.scenario.blueprint import Blueprint
from harness.scenario.fields import BlueprintError, Fields

if TYPE_CHECKING:
    from harness.checker.step import Step


def parse_expectations(raw: Any, blueprint: Blueprint, headers: bool, checks: dict[str, Step]) -> dict[str, Any]:
    """name -> value, each checked by its kind (a built-in one, or one the scenario's own `checks` carry) against
    the blueprint's hops and the workload's `headers`."""
    known = builtin()
    if checks or set(raw if isinstance(raw, dict) else ()) - set(known):  # the checks' own: their modules imported
        from harness.checker.expectations.registry import kinds  # the checks' modules: only when one is named

        known = kinds(tuple(checks.values()))
    f = Fields(raw, "expectations", set(known))
    hops = {t.name for t in blueprint.hops()} | {s.name for s in blueprint.streamlets.values() if s.role == EGRESS}
    scope = Scope(frozenset(hops), headers)
    expectations = {}
    for name, kind in known.items():
        value = f.get(name, kind.types, minimum=kind.minimum)
        if value is None:
            continue
        try:
            expectations[name] = kind.read(value, scope)
        except Invalid as exc:
            raise BlueprintError(f"expectations.{name}{exc.where}", exc.message) from None
    return expectations
