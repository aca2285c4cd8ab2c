"""The `storm` section of a scenario: faults drawn at random from the seed, overlapping, besides those listed.

    storm:
      faults: 6                 # timed faults to draw
      start_s: 10               # the first no earlier than this, seconds into the workload
      spacing_s: [2, 8]         # between one fault's start and the next's, drawn in this range
      kinds: [kill-driver, broker-pause]   # omit: every kind this pipeline and cluster can play
      max_brokers_down: 1       # omit: replication minus min.insync.replicas of the topics
      targets: [egress]         # omit: every target of each kind (streamlets, applications, brokers, links)
      moments: [after-write]    # omit: what each kind draws; else the moments (`at`) a kind with one is given

The faults are drawn when the run starts (harness.chaos.storm), from the run's seed: the same seed draws the
same storm, another seed another one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.faults import FaultKindError, builtin_fault_kinds, load_fault_kind
from harness.scenario.blueprint import BlueprintError
from harness.scenario.fields import Fields


@dataclass(frozen=True)
class StormSpec:
    faults: int = 6
    start_s: float = 10.0
    spacing_s: tuple[float, float] = (2.0, 8.0)
    kinds: tuple[str, ...] | None = None  # None: every kind that can play here
    max_brokers_down: int | None = None  # None: what the topics' replication allows
    targets: tuple[str, ...] | None = None  # None: every target each kind has here
    moments: tuple[str, ...] | None = None  # None: the moment each kind draws (kill-driver's `at`)


STORM_FIELDS = {"faults", "start_s", "spacing_s", "kinds", "max_brokers_down", "targets", "moments"}
MOMENT = "at"  # the parameter by which a kind says when, in a batch, it strikes (kill-driver's)


def parse_storm(raw: Any, section: str = "storm", extra: frozenset = frozenset()) -> StormSpec | None:
    """The storm section, or another drawing faults the same way (`section`: the schedule search's `explore`, which
    adds `extra` fields, read by its own parser)."""
    if raw is None:
        return None
    f = Fields(raw, section, STORM_FIELDS | extra)
    spacing = f.get("spacing_s", list, [2.0, 8.0])
    if (
        len(spacing) != 2
        or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in spacing)
        or not 0 <= spacing[0] <= spacing[1]
    ):
        raise BlueprintError(
            f"{section}.spacing_s", f"expected [least, most] seconds with 0 <= least <= most, got {spacing!r}"
        )
    kinds = f.get("kinds", list, None)
    if kinds is not None:
        if not kinds or not all(isinstance(k, str) for k in kinds):
            raise BlueprintError(f"{section}.kinds", f"expected a list of fault kind names, got {kinds!r}")
        for i, name in enumerate(kinds):
            try:
                load_fault_kind(name)
            except FaultKindError as exc:
                raise BlueprintError(f"{section}.kinds[{i}]", str(exc)) from None
    return StormSpec(
        f.get("faults", int, 6, minimum=1, maximum=200),
        f.number("start_s", 10.0, minimum=0),
        (float(spacing[0]), float(spacing[1])),
        None if kinds is None else tuple(kinds),
        f.get("max_brokers_down", int, None, minimum=0),
        _names(f, section, "targets"),
        _moments(f, section),
    )


def _names(f: Fields, section: str, name: str) -> tuple[str, ...] | None:
    values = f.get(name, list, None)
    if values is not None and (not values or not all(isinstance(v, str) for v in values)):
        raise BlueprintError(f"{section}.{name}", f"expected a list of names, got {values!r}")
    return None if values is None else tuple(values)


def _moments(f: Fields, section: str) -> tuple[str, ...] | None:
    """The moments asked for, each one some kind's (the choices of its `at` parameter)."""
    moments = _names(f, section, "moments")
    known = sorted(
        {c for kind in builtin_fault_kinds().values() if MOMENT in kind.params for c in kind.params[MOMENT].choices}
    )
    for i, moment in enumerate(moments or ()):
        if moment not in known:
            raise BlueprintError(
                f"{section}.moments[{i}]", f"{moment!r} is no fault's moment: one of {', '.join(known)}"
            )
    return moments
