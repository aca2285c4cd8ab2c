"""Whether each fault a run planned struck as declared: on a target that was there, at its moment, within its
window of its planned time. One that did not is a finding (docs/checker.md): the fault table says what happened
instead, and what the expectations would claim under the declared faults is unknown.

Read from the history alone: fault_planned (number, kind, target, planned_s, window_s), then per number its
fault_begun (late_s: how long after its planned time it began), fault_skipped, or crash_point_missed. A run
recorded before faults were planned in the history has only its skips and missed moments to go by.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.evidence.history import FAULT_BEGUN, FAULT_FAILED, FAULT_PLANNED, FAULT_SKIPPED, MOMENT_MISSED

# how it went astray: what the fault table and the report say
SKIPPED, MOMENT, LATE, NOT_PLAYED = "skipped", "moment missed", "late", "not played"


@dataclass(frozen=True)
class FaultMiss:
    """A fault that did not strike as declared: its number (None in a run that did not number its faults), what it
    was, how it went astray and why."""

    number: int | None
    kind: str
    target: str
    how: str  # SKIPPED | MOMENT | LATE | NOT_PLAYED
    why: str

    @property
    def text(self) -> str:
        number = "" if self.number is None else f" {self.number}"
        return f"fault{number} ({self.kind} {self.target}) did not strike as declared: {self.how}: {self.why}"


def misses(history: list[dict]) -> list[FaultMiss]:
    """The faults of the run that did not strike as declared, in the order of their numbers."""
    planned = {e["fault"]: e for e in history if e["event"] == FAULT_PLANNED}
    if not planned:  # an older run: its skips and missed moments only
        return [_miss(e) for e in history if e["event"] in (FAULT_SKIPPED, MOMENT_MISSED)]
    by_number: dict[int, list[dict]] = {}
    for e in history:
        if e["event"] in (FAULT_BEGUN, FAULT_SKIPPED, FAULT_FAILED, MOMENT_MISSED) and e.get("fault") in planned:
            by_number.setdefault(e["fault"], []).append(e)
    found = []
    for number, plan in sorted(planned.items()):
        events = by_number.get(number, [])
        astray = next((e for e in events if e["event"] in (FAULT_SKIPPED, MOMENT_MISSED)), None)
        begun = next((e for e in events if e["event"] == FAULT_BEGUN), None)
        if astray is not None:
            found.append(_miss(astray, plan))
        elif begun is not None and _late(begun, plan):
            why = (
                f"began {begun['late_s']:g}s after its planned {plan['planned_s']:g}s, past its window of "
                f"{plan['window_s']:g}s"
            )
            found.append(FaultMiss(number, plan["kind"], plan["target"], LATE, why))
        elif not events:  # a fault_failed is a doubt of its own (harness/checker/faults.py doubts)
            found.append(FaultMiss(number, plan["kind"], plan["target"], NOT_PLAYED, "the run ended before it began"))
    return found


def _late(begun: dict, plan: dict) -> bool:
    late, window = begun.get("late_s"), plan.get("window_s")
    return late is not None and window is not None and late > window


def _miss(event: dict, plan: dict | None = None) -> FaultMiss:
    kind = (plan or event).get("kind")
    how = MOMENT if event["event"] == MOMENT_MISSED else SKIPPED
    why = str(event.get("reason", ""))
    if how == MOMENT:
        why += "; it struck at whatever moment it was"
    return FaultMiss(event.get("fault"), str(kind), str(event.get("target")), how, why)
