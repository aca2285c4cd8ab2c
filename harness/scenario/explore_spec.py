"""The `explore` section of a scenario: the space `harness explore` draws fault schedules from.

    explore:
      faults: 3                 # at most this many faults per schedule (each draws 1 to 3)
      start_s: 5                # the first no earlier than this, seconds into the workload
      spacing_s: [1, 6]         # between one fault's start and the next's
      kinds: [kill-driver]      # omit: every kind this pipeline and cluster can play
      max_brokers_down: 1       # omit: replication minus min.insync.replicas of the topics
      targets: [egress]         # omit: every target of each kind
      moments: [after-write]    # omit: each kind's own draw of its moment (kill-driver's `at`)
      workload_s: 20            # each run's workload, seconds (short: many runs in a budget)

Faults are drawn as a storm's are (harness.chaos.storm): a kind, a target among its targets, its own
parameters (kill-driver's moment: anytime or after a write) and a moment a drawn spacing after the one before.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from harness.field import Field
from harness.scenario.sections import Section
from harness.scenario.storm_spec import STORM_FIELDS, StormSpec, parse_storm

DEFAULT = {"faults": 3, "start_s": 5.0, "spacing_s": [1, 6]}  # a search's: fewer faults, sooner, closer
EXPLORE = Section(
    "explore",
    (
        *(replace(spec, default=DEFAULT.get(spec.name, spec.default)) for spec in STORM_FIELDS),
        Field("workload_s", (int, float), 20.0, "each run's workload (short: many runs in a budget)", 5, 3600),
    ),
)


@dataclass(frozen=True)
class ExploreSpec:
    space: StormSpec  # faults: the most per schedule
    workload_s: float = 20.0


def parse_explore(raw: Any) -> ExploreSpec | None:
    if raw is None:
        return None
    return ExploreSpec(parse_storm(raw, EXPLORE), EXPLORE.read(raw)["workload_s"])
