"""Network faults on loopback: a TCP proxy in front of each broker for each link (harness/network/proxy.py),
and the harness's handle on it (links.py)."""

from harness.network.links import NetworkLinks

__all__ = ["NetworkLinks"]
