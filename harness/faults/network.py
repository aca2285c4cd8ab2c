"""What the network faults share: impair a link through the run's proxy for a while, then heal it.

The fault begins when the proxy has the impairment in force and ends when it has healed the link. A
streamlet's link disturbs that streamlet; the generator's disturbs the whole pipeline (scope cluster).
"""

from __future__ import annotations

import time

from harness.errors import HarnessError
from harness.faults.kind import GENERATOR, FaultKind, Param
from harness.faults.target import Pipeline

DURATION = Param((int, float), 20.0, minimum=0)  # how long the link stays impaired, seconds


def impair_link(run: Pipeline, kind: FaultKind, target: str, duration_s: float, **settings) -> None:
    if run.network is None or target not in run.network.links:
        raise HarnessError(f"{kind.name}: {target!r} has no network link through the proxy in this run")
    with run.undos.undoing(kind.name, target, f"heal the link {target}", lambda: _healed(run, kind, target)):
        run.network.impair(target, **settings)  # the fault begins once the proxy has it in force
        kind.begun(
            run, target, scope="cluster" if target == GENERATOR else "streamlet", duration_s=duration_s, **settings
        )
        time.sleep(duration_s)


def _healed(run: Pipeline, kind: FaultKind, target: str) -> None:
    run.network.heal(target)
    kind.ended(run, target)


def network_kind(
    name: str,
    play,
    params: dict[str, Param],
    help: str,
    duration: Param = DURATION,
    draw=None,
    weaker=None,
    wire=False,
    check=None,
) -> FaultKind:
    """A network kind: it targets a link, needs the embedded cluster (the brokers' link listeners), recovers. A
    storm holds a link impaired for 3 to 10 s (and draws the kind's own parameters with `draw`). `wire`: it acts
    on Kafka's requests, read by the proxy from each connection's start (and needs listeners without TLS)."""

    def drawn(rng) -> dict:
        return {"duration_s": round(rng.uniform(3.0, 10.0), 1), **(draw(rng) if draw else {})}

    return FaultKind(
        name=name,
        target="link",
        play=play,
        params={**params, "duration_s": duration},
        needs=("kafka-cluster", "plaintext") if wire else ("kafka-cluster",),
        help=help,
        draw=drawn,
        weaker=weaker,
        reads_wire=wire,
        check=check,
    )
