"""What one check of a run found, every report format is written from: the run it judged, what the evidence lacked,
the outcome, and an open map of what the steps found that the report shows (each a typed Key of its step's module,
read as report[KEY]); the checks' sections beside them.

`Report.to_dict()` is report.json: each reported key under its name. Its schema is documented in docs/checker.md
and versioned by SCHEMA_VERSION (bumped only when a field changes meaning or disappears).
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass, field, is_dataclass
from typing import Any, TypeVar

from harness.checker.counts import HOP_FINDINGS, VERDICT
from harness.checker.declared import FaultMiss
from harness.checker.expect import EXPECTATIONS
from harness.checker.expectations.result import PASS, UNKNOWN, ExpectationResult, merge
from harness.checker.section import Section
from harness.checker.step import Key

# 2: counts may be null, expectations[].status, outcome, unfinished, copies; 3: counts.undelivered (an unfinished
# run's lost is only what is proven), doubts, skipped_faults; 4: faults[].number and declared, fault_misses, and a
# skipped fault no longer judged as usual (docs/checker.md); 5: sections, one per check of harness/checker/checks/;
# 6: the same fields, each what a step found (no field changed meaning)
SCHEMA_VERSION = 6
T = TypeVar("T")


def outcome_of(expectations: list[ExpectationResult], verdict: str, unfinished: str, doubts: list, misses: list) -> str:
    """pass | fail | unknown: the expectations merged; unknown too when the verdict itself is unknown, the run did
    not finish (missing deliveries of a run in progress are not losses) or has doubts."""
    merged = merge(e.status for e in expectations)
    if merged == PASS and (verdict == "unknown" or unfinished or doubts or misses):
        return UNKNOWN
    return merged


@dataclass(frozen=True)
class Report:
    run_dir: str
    scenario: str
    description: str
    status: str  # how the run ended: complete | interrupted | failed | unknown
    outcome: str  # outcome_of
    run_info: dict  # seed, duration_s, faults planned and played, versions
    found: dict[Key, Any]  # what the steps found that the report shows (each reported key, and the record sets)
    gaps: list[str] = field(default_factory=list)  # evidence missing or unreadable: the report is partial
    unfinished: str = ""  # why the run is not a finished one (in progress, cut short), or ""
    # what makes the outcome unknown whatever the counts (a fault half done)
    doubts: list[str] = field(default_factory=list)
    query_failures: list[dict] = field(default_factory=list)  # history query_failed: streamlet, ts_ms, error
    skipped_faults: list[dict] = field(default_factory=list)  # faults that did nothing: kind, target, fault, reason
    # faults that did not strike as declared (skipped, moment missed, late, not played): the outcome is not a pass
    fault_misses: list[FaultMiss] = field(default_factory=list)
    sections: dict[str, Section] = field(default_factory=dict)  # each check's of harness/checker/checks/, by name

    def __getitem__(self, key: Key[T]) -> T:
        return self.found[key] if key in self.found else key.unknown()

    @property
    def passed(self) -> bool:
        return self.outcome == PASS

    def to_dict(self) -> dict:
        data: dict = {}
        for name, value in vars(self).items():
            if name == "found":
                data |= {key.name: _plain(value) for key, value in self.found.items() if key.reported}
            else:
                data[name] = _plain(value)
        data["schema_version"] = SCHEMA_VERSION
        data[VERDICT.name] = {"end_to_end": self[VERDICT], "hops": {h.name: h.verdict for h in self[HOP_FINDINGS]}}
        data["passed"] = self.passed
        data["partial"] = bool(self.gaps or self.unfinished or self.doubts or self.fault_misses)
        for result, expectation in zip(data[EXPECTATIONS.name], self[EXPECTATIONS]):
            result["passed"] = expectation.passed
        for section in data["sections"].values():
            if not section["data"]:
                del section["data"]
        return data


def _plain(value: Any) -> Any:
    """`value` as JSON's plain data, as dataclasses.asdict makes a dataclass's fields."""
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return copy.deepcopy(value)
