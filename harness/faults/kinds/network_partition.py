"""network-partition: a link's traffic is blackholed for `duration_s`: nothing is read or forwarded, open
connections hang and new ones are accepted and hang, as across a cut; then everything flows again."""

from __future__ import annotations

from harness.faults.network import impair_link, network_kind


def partition(run, target: str, duration_s: float) -> None:
    impair_link(run, KIND, target, duration_s, partition=True)


KIND = network_kind(
    "network-partition",
    partition,
    {},
    help="cut a link (a streamlet's or the generator's) for duration_s: traffic blackholed, connections hang",
    weaker="network-delay",
)
