"""Every expectation kind a check may judge: the built-in ones (kinds/) and those the checks carry."""

from __future__ import annotations

from contract.plugins import builtin_kinds
from harness.checker.expectations.kind import ExpectationKind, builtin
from harness.checker.step import Step


def kinds(checks: tuple[Step, ...] = ()) -> dict[str, ExpectationKind]:
    """The expectation kinds, by name, in the order their results are reported: the built-in ones, and those the
    built-in checks and `checks` (a scenario's own) carry."""
    carriers = [*builtin_kinds("harness.checker.checks", Step).values(), *checks]
    found = [*builtin().values(), *(kind for check in carriers for kind in check.expectations)]
    named: dict[str, ExpectationKind] = {}
    for kind in found:
        if named.setdefault(kind.name, kind) is not kind:
            raise ValueError(f"two expectations named {kind.name}")
    return dict(sorted(named.items(), key=lambda item: (item[1].rank, item[0])))
