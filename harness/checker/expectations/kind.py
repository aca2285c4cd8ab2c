"""What an expectation kind is: its name, the value it takes, and its judgement of what the checker found.

One module per kind (harness/checker/expectations/kinds/) defines `KIND = ExpectationKind(...)`. The scenario
type-checks a value against `types` and `minimum` and hands it to `read` for the rest (a guarantee's name, a hop
that must exist); the checker calls `judge` with the value pipeline.json kept and what the steps found (`Found`),
and gets one result, pass, fail or unknown, per thing expected (per_hop: one per hop named).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from contract.plugins import builtin_kinds
from harness.checker.expectations.result import FAIL, PASS, UNKNOWN, ExpectationResult
from harness.checker.section import OUTPUTS_VERDICT
from harness.semantics import GUARANTEES, satisfies

if TYPE_CHECKING:
    from harness.checker.findings import FaultResult, Hop, ResourceUse
    from harness.checker.reconcile import Counts
    from harness.checker.section import Section


class Invalid(ValueError):
    """A value an expectation does not take: `where` below its name ("" for the value itself) and why."""

    def __init__(self, where: str, message: str):
        super().__init__(message)
        self.where, self.message = where, message


@dataclass(frozen=True)
class Scope:
    """What a value is read against: the hops it may name and whether the source's records carry a header (None:
    read from pipeline.json, where the scenario checked them already)."""

    hops: frozenset[str] | None = None
    headers: bool | None = None


@dataclass(frozen=True)
class Found:
    """What the expectations read of the checker's findings."""

    verdict: str
    counts: Counts
    hops: list[Hop]
    lost_by_cause: dict | None  # None: losses could not be counted
    faults: list[FaultResult]
    query_failures: list[dict] | None  # None: no history to read them from
    unfinished: str  # why the run is not finished ("" when it is): every loss-based result is unknown
    resources: ResourceUse | None
    sections: dict[str, Section]  # the checks' sections (harness/checker/checks/), by check: what their kinds read


@dataclass(frozen=True)
class ExpectationKind:
    """`types`: what the scenario's value may be (bool is never an int); `read(value, scope)`: the value kept, or
    Invalid; `rank`: where its results come among the others'; `fault_free`: its result does not depend on the
    faults having struck as declared; `made_by_faults`: what it asks for is made by the faults, so too little of
    it is unknown when one did not strike."""

    name: str
    help: str
    types: tuple[type, ...]
    judge: Callable[[Any, Found], list[ExpectationResult]]
    rank: int
    read: Callable[[Any, Scope], Any] = lambda value, scope: value
    minimum: float | None = None
    fault_free: bool = False
    made_by_faults: bool = False


def builtin() -> dict[str, ExpectationKind]:
    """The expectation kinds of kinds/, by name (those the checks carry are kinds()')."""
    return builtin_kinds("harness.checker.expectations.kinds", ExpectationKind)


def guarantee(value: Any, where: str = "") -> str:
    """One of harness.semantics' guarantees, or Invalid."""
    if value not in GUARANTEES:
        raise Invalid(where, f"expected one of {', '.join(GUARANTEES)}, got {value!r}")
    return value


def status(ok: bool) -> str:
    return PASS if ok else FAIL


def guaranteed(name: str, expected: str, actual: str | None, what: str, why_unknown: str) -> ExpectationResult:
    """A guarantee expected: met by this one or a stronger; unknown where none was measured."""
    if actual is None or actual == "unknown":
        return ExpectationResult(
            name, expected, actual, UNKNOWN, f"{what}: unknown ({why_unknown}), expected {expected} or stronger"
        )
    return ExpectationResult(
        name,
        expected,
        actual,
        status(satisfies(actual, expected)),
        f"{what}: {actual}, expected {expected} or stronger",
    )


def of_section(name: str, help_text: str, what: str, why_unknown: str, rank: int) -> ExpectationKind:
    """`NAME: GUARANTEE`: met where the verdict that check `name`'s section gives of what it judges (OUTPUTS_VERDICT) is
    this guarantee or a stronger one; unknown where there is none."""

    def judge(expected: str, found: Found) -> list:
        section = found.sections.get(name)
        actual = section.data.get(OUTPUTS_VERDICT) if section is not None else None
        return [guaranteed(name, expected, actual, what, why_unknown)]

    return ExpectationKind(name, help_text, (str,), judge, rank=rank, read=lambda value, scope: guarantee(value))


def lost(found: Found) -> tuple[int | None, str]:
    """The records lost, None where unknown (a run not finished: what is missing is not lost yet), and why not."""
    return (None if found.unfinished else found.counts.lost), (found.unfinished or "no egress evidence")


def at_most_each(name: str, limit: float, values: dict[str, float | None], what: str, unit: str) -> ExpectationResult:
    """A limit on a value each streamlet has (`values`: its section's data, None where it was not measured): fail
    naming those over it, else unknown where one was not measured (or none was), else pass with the largest."""
    over = {who: v for who, v in values.items() if v is not None and v > limit}
    worst = max((v for v in values.values() if v is not None), default=None)
    if over:
        detail = f"{what} over {limit:,g}{unit}: " + ", ".join(f"{who} {v:,g}{unit}" for who, v in over.items())
        return ExpectationResult(name, limit, worst, FAIL, detail)
    unmeasured = [who for who, v in values.items() if v is None] or ([] if values else ["any streamlet"])
    if unmeasured:
        return ExpectationResult(
            name, limit, worst, UNKNOWN, f"{what}: unknown (not measured of {', '.join(unmeasured)})"
        )
    return ExpectationResult(
        name, limit, worst, PASS, f"{what}: at most {worst:,g}{unit}, at most {limit:,g}{unit} allowed"
    )
