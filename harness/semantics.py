"""The vocabulary of delivery semantics, in one place: the guarantees, their order, and why records are lost.

Guarantees are ordered: exactly-once > effectively-exactly-once > at-least-once > none, and
exactly-once > at-most-once > none. "At least at-least-once" is met by the three stronger-or-equal ones,
never by at-most-once. Scenarios name them in expectations; the checker gives them as verdicts.
"""

from __future__ import annotations

GUARANTEES = ("exactly-once", "effectively-exactly-once", "at-least-once", "at-most-once", "none")

# What each guarantee implies (itself included).
IMPLIES = {
    "exactly-once": set(GUARANTEES),
    "effectively-exactly-once": {"effectively-exactly-once", "at-least-once", "none"},
    "at-least-once": {"at-least-once", "none"},
    "at-most-once": {"at-most-once", "none"},
    "none": {"none"},
}

# Why a record was lost, as the checker explains it; every cause but the last can be expected by a scenario.
LOST_CAUSES = (
    "leader_truncated",
    "retention",
    "redeploy",
    "topic_recreated",
    "watermark",
    "query_failed",
    "unexplained",
)
EXPECTABLE_CAUSES = LOST_CAUSES[:-1]


def satisfies(verdict: str, required: str) -> bool:
    """Is `verdict` the `required` guarantee or a stronger one?"""
    return required in IMPLIES[verdict]


def weakest(verdicts: list[str]) -> str:
    """The strongest guarantee every one of `verdicts` holds ("unknown" if one is unknown, or there is none)."""
    if not verdicts or "unknown" in verdicts:
        return "unknown"
    return next(g for g in GUARANTEES if all(satisfies(v, g) for v in verdicts))
