"""network-bandwidth: a link's traffic, both ways together, is held to `bytes_per_s`."""

from __future__ import annotations

from harness.faults.kind import Param
from harness.faults.network import impair_link, network_kind


def throttle(run, target: str, bytes_per_s: float, duration_s: float) -> None:
    impair_link(run, KIND, target, duration_s, bytes_per_s=bytes_per_s)


KIND = network_kind(
    "network-bandwidth",
    throttle,
    {
        "bytes_per_s": Param((int, float), 20_000.0, minimum=1),
    },
    help="hold a link's traffic (a streamlet's or the generator's) to bytes_per_s for duration_s",
    draw=lambda rng: {"bytes_per_s": round(rng.uniform(10_000.0, 100_000.0))},
)
