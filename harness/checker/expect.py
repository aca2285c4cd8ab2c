"""Judging a scenario's expectations against what the checker found: one three-valued result per expectation.

Each expectation is pass, fail or unknown. Unknown when what it needs could not
be measured: no egress evidence (lost, duplicates, the verdict), a hop without
evidence, no history (query failures), no fault whose recovery was measured,
or a run that did not finish (what is missing so far is not yet lost).
"""

from __future__ import annotations

from dataclasses import replace

from harness.checker.counts import COUNTS, HOP_FINDINGS, LOST_BY_CAUSE, VERDICT
from harness.checker.declared import FaultMiss
from harness.checker.expectations.kind import ExpectationKind, Found, Invalid, Scope
from harness.checker.expectations.registry import kinds
from harness.checker.expectations.result import PASS, UNKNOWN, ExpectationResult
from harness.checker.fault_results import FAULTS
from harness.checker.reconcile import Counts
from harness.checker.resources import RESOURCE_USE
from harness.checker.section import OUTPUTS_COUNTS, OUTPUTS_VERDICT
from harness.checker.step import Context, Key, Step
from harness.semantics import weakest

EXPECTATIONS: Key[list[ExpectationResult]] = Key("expectations", list, reported=True)


def judge(expected: dict, found: Found, known: dict[str, ExpectationKind] | None = None) -> list[ExpectationResult]:
    """Each expectation of `expected` (name -> the value pipeline.json kept) judged by its kind (of `known`: the
    built-in ones by default), in the kinds' order; one named that no kind judges is unknown (a run directory
    written by another harness, or a check of its own that could not be loaded)."""
    known, results = known or kinds(), []
    for name, kind in known.items():
        if expected.get(name) in (None, {}):
            continue
        try:
            value = kind.read(expected[name], Scope())
        except Invalid as exc:  # a pipeline.json edited by hand: not judged, and said so
            detail = f"expectations.{name}{exc.where}: {exc.message}"
            results.append(ExpectationResult(name, expected[name], None, UNKNOWN, detail))
            continue
        results += kind.judge(value, found)
    return results + [
        ExpectationResult(name, value, None, UNKNOWN, f"{name}: no such expectation in this harness")
        for name, value in expected.items()
        if name not in known and value is not None
    ]


def undeclared(
    results: list[ExpectationResult], misses: list[FaultMiss], known: dict[str, ExpectationKind]
) -> list[ExpectationResult]:
    """With faults that did not strike as declared, what depends on them is not shown: a pass is unknown, and so
    is too few duplicates (the fault that would have made them did not play); any other failure stands."""
    if not misses:
        return results
    why = "; ".join(m.text for m in misses)

    def shown(result: ExpectationResult) -> bool:
        kind = known.get(result.name.partition(".")[0])
        return kind is not None and kind.fault_free or result.status != PASS and not (kind and kind.made_by_faults)

    return [r if shown(r) else replace(r, status=UNKNOWN, detail=f"{r.detail}; unknown, as {why}") for r in results]


def end_to_end(context: Context) -> tuple[str, Counts]:
    """The run's verdict and counts: those of its outputs holding records, their verdict bounded by those the checks'
    sections give of what they judge beside (OUTPUTS_VERDICT: a left outer join's rows, an aggregate); where no
    output holds records (each holds an aggregate), the sections' verdicts and counts (OUTPUTS_COUNTS)."""
    judged = [s.data for s in context.sections.values() if OUTPUTS_VERDICT in s.data]
    if not judged:
        return context[VERDICT], context[COUNTS]
    if context.evidence.pipeline.holds_records:
        return weakest([context[VERDICT], *(data[OUTPUTS_VERDICT] for data in judged)]), context[COUNTS]
    verdict = "unknown" if context.unfinished else weakest([data[OUTPUTS_VERDICT] for data in judged])
    return verdict, Counts.summed([Counts(**data[OUTPUTS_COUNTS]) for data in judged])


def _expectations(context: Context) -> dict:
    evidence = context.evidence
    verdict, counts = end_to_end(context)
    found = Found(
        verdict,
        counts,
        context[HOP_FINDINGS],
        context[LOST_BY_CAUSE],
        context[FAULTS],
        context.query_failures if evidence.has_history else None,
        context.unfinished,
        context[RESOURCE_USE],
        context.sections,
    )
    known = kinds(context.own_checks)
    return {EXPECTATIONS: undeclared(judge(evidence.pipeline.expectations, found, known), context.misses, known)}


def _expectations_unknown(context: Context) -> dict:
    failed = ", ".join(sorted(context.failed))
    return {
        EXPECTATIONS: [
            ExpectationResult("expectations", None, None, UNKNOWN, f"not judged: check step(s) {failed} failed")
        ]
    }


# the last step (check.py all_steps): the checks' sections are what their expectations read
STEP = Step(
    "expectations",
    _expectations,
    writes=(EXPECTATIONS,),
    needs=(COUNTS, VERDICT, HOP_FINDINGS, LOST_BY_CAUSE, FAULTS),
    uses=(RESOURCE_USE,),
    unknown=_expectations_unknown,
)
