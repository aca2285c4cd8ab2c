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
from harness.field import Field
from harness.scenario.fields import BlueprintError
from harness.scenario.sections import Section


@dataclass(frozen=True)
class StormSpec:
    faults: int = 6
    start_s: float = 10.0
    spacing_s: tuple[float, float] = (2.0, 8.0)
    kinds: tuple[str, ...] | None = None  # None: every kind that can play here
    max_brokers_down: int | None = None  # None: what the topics' replication allows
    targets: tuple[str, ...] | None = None  # None: every target each kind has here
    moments: tuple[str, ...] | None = None  # None: the moment each kind draws (kill-driver's `at`)


STORM_FIELDS = (
    Field("faults", int, 6, "how many faults", minimum=1, maximum=200),
    Field("start_s", (int, float), 10.0, "the first one's time", minimum=0),
    Field("spacing_s", list, [2.0, 8.0], "[least, most] seconds between two faults"),
    Field("kinds", list, None, "the fault kinds drawn from (every one that can play here by default)"),
    Field("max_brokers_down", int, None, "brokers down at once (what the topics' replication allows)", minimum=0),
    Field("targets", list, None, "the targets drawn from (every target of each kind)"),
    Field("moments", list, None, "the moments drawn from (kill-driver's `at`: after-write, in-flight)"),
)
STORM = Section("storm", STORM_FIELDS)
MOMENT = "at"  # the parameter by which a kind says when, in a batch, it strikes (kill-driver's)


def parse_storm(raw: Any, section: Section = STORM) -> StormSpec | None:
    """The storm section, or another drawing faults the same way (`section`: the schedule search's `explore`, whose
    own fields its parser reads)."""
    if raw is None:
        return None
    v = section.read(raw)
    section_path = section.path
    spacing = v["spacing_s"]
    if (
        len(spacing) != 2
        or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in spacing)
        or not 0 <= spacing[0] <= spacing[1]
    ):
        raise BlueprintError(
            f"{section_path}.spacing_s", f"expected [least, most] seconds with 0 <= least <= most, got {spacing!r}"
        )
    kinds = v["kinds"]
    if kinds is not None:
        if not kinds or not all(isinstance(k, str) for k in kinds):
            raise BlueprintError(f"{section_path}.kinds", f"expected a list of fault kind names, got {kinds!r}")
        for i, name in enumerate(kinds):
            try:
                load_fault_kind(name)
            except FaultKindError as exc:
                raise BlueprintError(f"{section_path}.kinds[{i}]", str(exc)) from None
    return StormSpec(
        v["faults"],
        v["start_s"],
        (float(spacing[0]), float(spacing[1])),
        None if kinds is None else tuple(kinds),
        v["max_brokers_down"],
        _names(v, section_path, "targets"),
        _moments(v, section_path),
    )


def _names(v: dict, section: str, name: str) -> tuple[str, ...] | None:
    values = v[name]
    if values is not None and (not values or not all(isinstance(x, str) for x in values)):
        raise BlueprintError(f"{section}.{name}", f"expected a list of names, got {values!r}")
    return None if values is None else tuple(values)


def _moments(v: dict, section: str) -> tuple[str, ...] | None:
    """The moments asked for, each one some kind's (the choices of its `at` parameter)."""
    moments = _names(v, section, "moments")
    known = sorted(
        {c for kind in builtin_fault_kinds().values() if MOMENT in kind.params for c in kind.params[MOMENT].choices}
    )
    for i, moment in enumerate(moments or ()):
        if moment not in known:
            raise BlueprintError(
                f"{section}.moments[{i}]", f"{moment!r} is no fault's moment: one of {', '.join(known)}"
            )
    return moments
