"""An expectation's result, three-valued, and how results merge into an outcome."""

from __future__ import annotations

from dataclasses import dataclass

PASS, FAIL, UNKNOWN = "pass", "fail", "unknown"


@dataclass(frozen=True)
class ExpectationResult:
    """One expectation, three-valued (Jepsen's :valid? true / false / :unknown): unknown when the evidence it
    needs is missing, unreadable or empty. Unknown is never a pass."""

    name: str  # e.g. end_to_end, per_hop.processed, max_lost
    expected: object
    actual: object  # None when it could not be measured
    status: str  # pass | fail | unknown
    detail: str

    @property
    def passed(self) -> bool:
        return self.status == PASS


def merge(statuses) -> str:
    """fail beats unknown beats pass (an empty set passes)."""
    statuses = set(statuses)
    return FAIL if FAIL in statuses else UNKNOWN if UNKNOWN in statuses else PASS
