"""Outcomes as exit codes, for release gating: unknown is never a pass unless the user allows it."""

from __future__ import annotations

EXIT_PASS, EXIT_FAIL, EXIT_UNKNOWN = 0, 1, 3
_SEVERITY = {EXIT_PASS: 0, EXIT_UNKNOWN: 1, EXIT_FAIL: 2}


def exit_code(outcome: str, allow_unknown: bool) -> int:
    """pass -> 0, fail -> 1, unknown -> 3 (0 with `allow_unknown`)."""
    return {"pass": EXIT_PASS, "fail": EXIT_FAIL}.get(outcome, EXIT_PASS if allow_unknown else EXIT_UNKNOWN)


def worst(codes: list[int]) -> int:
    """The exit code of several runs: a failure over an unknown over a pass (any other code counts as a failure)."""
    return max(codes, key=lambda code: _SEVERITY.get(code, 2))
