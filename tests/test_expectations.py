"""Expectations judged on what the checker found: the exact verdict a caveat scenario expects."""

from __future__ import annotations

from harness.checker.expect import judge
from harness.evidence.description import Expectations
from tests.test_resources import COUNTS


def test_an_exact_verdict_passes_only_on_that_verdict_and_is_unknown_when_the_verdict_is():
    expected = Expectations(verdict="at-most-once")
    assert judge(expected, "at-most-once", COUNTS, [], {}, [], [])[0].status == "pass"
    stronger = judge(expected, "exactly-once", COUNTS, [], {}, [], [])[0]
    assert stronger.status == "fail" and "expected exactly at-most-once" in stronger.detail, (
        "a caveat that did not show fails"
    )
    assert judge(expected, "unknown", COUNTS, [], {}, [], [])[0].status == "unknown"
    assert judge(expected, "at-most-once", COUNTS, [], {}, [], [], unfinished="run in progress")[0].status == "unknown"
