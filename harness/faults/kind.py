"""What a fault kind is: its parameters, its target, how it plays, and how the checker should read it.

One module per kind (harness/faults/kinds/, or a user's `package.module:attr`) defines one `FaultKind`.
The scenario parser validates a fault against its `params` and `target`; the chaos driver calls `play`
when a firing is due (or `prepare`/`finish` around the workload for a whole-run kind); the kind's
classification (`scope`, `restarts`, `recovers`) is written into every fault_begun it records, so the
checker reads it from the history and keeps no list of kinds.
"""

from __future__ import annotations

import inspect
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from harness.errors import HarnessError
from harness.evidence.history import FAULT_BEGUN, FAULT_ENDED, MOMENT_MISSED

REQUIRED = object()  # a Param without a default must be given
TARGETS = {
    "streamlet": "a streamlet of the blueprint",
    "processor": "a streamlet of kind processor",
    "ingress": "a streamlet reading the workload's source topic",
    "broker": "broker-N of the cluster the harness starts, or of cluster.docker.containers",
    "link": "a streamlet's network link to the brokers, or `generator`'s",
    "worker": "worker-N of the Spark standalone cluster the harness started",
    "generator": "the workload's generator: the records it writes",
}
NEEDS = {
    "kafka-cluster": "the Kafka cluster the harness starts (its brokers' listeners: network links)",
    "brokers": "brokers the harness can fault: the cluster it starts (processes or containers), or the broker "
    "containers of one's own listed in cluster.docker.containers",
    "spark-cluster": "the Spark standalone cluster the harness starts (cluster.spark.master: standalone)",
    "plaintext": "listeners without TLS: the network proxy reads Kafka's requests and responses as they pass",
}
GENERATOR = "generator"  # the generator's network link, a target of the network kinds
SCOPES = ("streamlet", "cluster", "none")  # what a fault disturbs: its target streamlet, every streamlet, nothing
_PLAYING = threading.local()  # per thread (each fault plays in its own): its firing, and has it recorded fault_begun?


class TargetGone(HarnessError):
    """The fault's target is not there to be faulted (a driver that ended, a broker already down): the fault is
    skipped, nothing was done."""


@dataclass(frozen=True)
class FiringContext:
    """The firing a timed fault plays in this thread: its number in the run's faults, when the schedule planned it
    and when the schedule began (time.monotonic()), so fault_begun says how late it struck."""

    number: int
    planned_s: float  # seconds into the workload
    t0: float

    def fields(self) -> dict:
        late = round(time.monotonic() - self.t0 - self.planned_s, 3)
        return {"fault": self.number, "planned_s": self.planned_s, "late_s": late}


def play_begins(firing: FiringContext | None = None) -> None:
    """A fault starts playing in this thread (`firing`: which one of the schedule): it has done nothing yet."""
    _PLAYING.begun = False
    _PLAYING.firing = firing


def _firing_fields() -> dict:
    firing = getattr(_PLAYING, "firing", None)
    return firing.fields() if firing is not None else {}


def has_begun() -> bool:
    """Whether the fault playing in this thread recorded fault_begun: from then on it may have had an effect."""
    return getattr(_PLAYING, "begun", False)


def _signature_problem(play: Callable[..., None], params: dict[str, "Param"]) -> str | None:
    """What is wrong with `play`'s signature for `params`: it takes (run, target) and then each parameter by its
    name (or all of them as **keywords), none with a default of its own (the Param's is its one default); None when
    nothing is."""
    taken = list(inspect.signature(play).parameters.values())[2:]
    if any(arg.kind is arg.VAR_KEYWORD for arg in taken):
        return None
    for arg in taken:
        if arg.name not in params:
            return f"play takes {arg.name}, which is not one of its params ({', '.join(params) or 'none'})"
        if arg.default is not inspect.Parameter.empty:
            return f"play's {arg.name} has a default of its own ({arg.default!r}): state it once, in its Param"
    missing = [name for name in params if name not in {arg.name for arg in taken}]
    return f"play does not take its param {missing[0]}" if missing else None


@dataclass(frozen=True)
class Param:
    """One parameter of a fault kind: its type(s), default, bounds or choices."""

    types: type | tuple[type, ...]
    default: Any = REQUIRED
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] | None = None

    @property
    def numeric(self) -> bool:
        return self.types == (int, float)


@dataclass(frozen=True)
class FaultKind:
    """A kind of fault.

    `play(run, target, **params)` blocks until the pipeline is whole again (a timed kind). A whole-run kind
    has no `play`: `prepare(run, target, params)` runs before the drivers start, and `finish(run, target,
    params) -> dict` after the workload, its result going into fault_ended.

    The classification goes into the history with each fault_begun (`begun`): `scope` says which progress
    shows the recovery and which copies the fault may have made (its target streamlet's, or every
    streamlet's for a fault of the cluster or the source); `restarts` that it stops and restarts its target's
    driver (recovery is timed from the restart); `recovers` that a recovery time applies at all.
    """

    name: str
    target: str
    help: str
    params: dict[str, Param] = field(default_factory=dict)
    play: Callable[..., None] | None = None
    prepare: Callable[[Any, str, dict], None] | None = None
    finish: Callable[[Any, str, dict], dict] | None = None
    scope: str = "streamlet"
    restarts: bool = False
    recovers: bool = True
    needs: tuple[str, ...] = ()  # of NEEDS: what the harness must have started for this kind to play
    check: Callable[[dict], tuple[str, str] | None] | None = None  # params -> (field, why) when they clash
    draw: Callable[[random.Random], dict] | None = None  # a storm's parameters for it (None: its defaults)
    solo: str | None = None  # why a storm leaves it out: it cannot overlap other faults safely (None: it can)
    of_workload: bool = False  # a property of the records rather than a fault: a run without faults keeps it
    weaker: str | None = None  # a kind that does less to the same target (the schedule search's shrinking tries it)
    on_topics: bool = False  # it acts on its target's input topics (their retention, partitions, the topic itself)
    records_producers: bool = False  # its evidence needs the brokers' producer of each batch (producers.csv)
    reads_wire: bool = False  # its link's proxy reads Kafka's requests and responses from the start (kafka-error)

    def __post_init__(self) -> None:
        if self.target not in TARGETS:
            raise ValueError(
                f"fault kind {self.name!r}: target must be one of {', '.join(TARGETS)}, not {self.target!r}"
            )
        if self.scope not in SCOPES:
            raise ValueError(f"fault kind {self.name!r}: scope must be one of {', '.join(SCOPES)}, not {self.scope!r}")
        if not set(self.needs) <= set(NEEDS):
            raise ValueError(f"fault kind {self.name!r}: needs must be among {', '.join(NEEDS)}, not {self.needs!r}")
        if (self.play is None) == (self.prepare is None and self.finish is None):
            raise ValueError(f"fault kind {self.name!r}: give play (a timed fault) or prepare/finish (a whole-run one)")
        problem = _signature_problem(self.play, self.params) if self.play is not None else None
        if problem:
            raise ValueError(f"fault kind {self.name!r}: {problem}")

    @property
    def shapes_start(self) -> bool:
        """Whether a run must know of it before its pipeline starts: it prepares something then, or its target is a
        network link (proxied from the start). A run whose faults shape nothing can be started before its schedule is
        drawn (harness/runner/pipeline_start.py)."""
        return self.prepare is not None or self.target == "link"

    @property
    def scheduled(self) -> bool:
        """Timed (start_s, every_s, times) rather than active for the whole run."""
        return self.play is not None

    def defaults(self) -> dict:
        """The parameters that have a default, at it."""
        return {name: p.default for name, p in self.params.items() if p.default is not REQUIRED}

    def drawn(self, rng: random.Random) -> dict:
        """Parameters for a storm: its draw over its defaults (harness.chaos.storm)."""
        return {**self.defaults(), **(self.draw(rng) if self.draw else {})}

    @property
    def drawable(self) -> bool:
        """A storm can give it parameters: it draws them, or every one has a default."""
        return self.draw is not None or all(p.default is not REQUIRED for p in self.params.values())

    def classification(self) -> dict:
        return {"scope": self.scope, "restarts": self.restarts, "recovers": self.recovers}

    def begun(self, run, target: str, **fields) -> None:
        """Record fault_begun with the kind's classification (which `fields` may refine for this target), so
        the checker needs no list of kinds."""
        _PLAYING.begun = True
        run.history.record(
            FAULT_BEGUN, kind=self.name, target=target, **{**_firing_fields(), **self.classification(), **fields}
        )

    def missed(self, run, target: str, reason: str) -> None:
        """Record that the fault's moment did not come (`crash_point_missed`): it struck at whatever moment it was,
        not as declared, which the checker reports."""
        run.history.record(MOMENT_MISSED, kind=self.name, target=target, reason=reason, **_firing_fields())

    def ended(self, run, target: str, **fields) -> None:
        run.history.record(FAULT_ENDED, kind=self.name, target=target, **fields)
