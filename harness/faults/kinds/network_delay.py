"""network-delay: every chunk of a link's traffic, both ways, arrives `delay_ms` (+/- `jitter_ms`) late, in order."""

from __future__ import annotations

from harness.faults.kind import Param
from harness.faults.network import impair_link, network_kind


def delay(run, target: str, delay_ms: float, jitter_ms: float, duration_s: float) -> None:
    impair_link(run, KIND, target, duration_s, delay_ms=delay_ms, jitter_ms=jitter_ms)


KIND = network_kind(
    "network-delay",
    delay,
    {
        "delay_ms": Param((int, float), 200.0, minimum=0),
        "jitter_ms": Param((int, float), 0.0, minimum=0),
    },
    help="delay a link's traffic (a streamlet's or the generator's) by delay_ms +/- jitter_ms for duration_s",
    draw=lambda rng: {"delay_ms": round(rng.uniform(50.0, 500.0)), "jitter_ms": round(rng.uniform(0.0, 50.0))},
)
