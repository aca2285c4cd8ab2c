"""network-reset: every connection of a link is reset (the peers get a RST), and any new one for `duration_s`."""

from __future__ import annotations

from harness.faults.kind import Param
from harness.faults.network import impair_link, network_kind


def reset(run, target: str, duration_s: float) -> None:
    impair_link(run, KIND, target, duration_s, reset=True)


KIND = network_kind(
    "network-reset",
    reset,
    {},
    duration=Param((int, float), 0.0, minimum=0),
    help="reset every connection of a link (a streamlet's or the generator's), and new ones for duration_s (default 0)",
)
