"""The harness's handle on the network proxy of a run: start it, impair a link, heal it.

A link is a streamlet's (its driver and executors) or the generator's connection to the brokers; each
broker advertises one client listener per link whose address is the proxy (harness.cluster.config), so
metadata never sends a link's clients around it. A change is in force once the proxy says it applied it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from harness.files import write_atomically
from harness.process import ManagedProcess, Supervisor, accepts
from harness.waiting import wait_for

PROCESS = "network-proxy"


class NetworkLinks:
    def __init__(
        self, supervisor: Supervisor, control: Path, log: Path, routes: list[dict], requests: Path | None = None
    ):
        """`routes`: link, listen and upstream ports, `wire` (read as Kafka's frames); `requests`: where the proxy
        logs the Kafka requests it acts on."""
        self.supervisor, self.control, self.log, self.routes, self.requests = supervisor, control, log, routes, requests
        self.process: ManagedProcess | None = None
        self._generation = 0

    @property
    def links(self) -> list[str]:
        return sorted({r["link"] for r in self.routes})

    def reads_wire(self, link: str) -> bool:
        """Whether the proxy reads the link's connections as Kafka's frames (from their start: a kafka-error's)."""
        return any(r.get("wire") for r in self.routes if r["link"] == link)

    def bootstrap(self, link: str) -> str:
        """A link's bootstrap servers: the proxy's port in front of each broker."""
        return ",".join(f"127.0.0.1:{r['listen']}" for r in self.routes if r["link"] == link)

    def start(self, timeout: float = 20.0) -> "NetworkLinks":
        """Start the proxy and return once every route accepts connections."""
        self.control.mkdir(parents=True, exist_ok=True)
        config = self.control / "proxy.json"
        settings = {"routes": self.routes, "control": str(self.control)}
        if self.requests is not None:
            settings["requests"] = str(self.requests)
        write_atomically(config, json.dumps(settings, indent=2))
        self.process = self.supervisor.start(
            PROCESS, [sys.executable, "-m", "harness.network.proxy", str(config)], self.log
        )
        wait_for(
            lambda: all(accepts(r["listen"]) for r in self.routes),
            timeout=timeout,
            interval=0.1,
            what=f"the network proxy to listen on {', '.join(str(r['listen']) for r in self.routes)}",
            abort=lambda: None if self.process.running() else f"the network proxy exited (see {self.log})",
        )
        return self

    def impair(self, link: str, timeout: float = 10.0, **settings) -> dict:
        """Put `settings` (delay_ms, jitter_ms, bytes_per_s, partition, reset, kafka; none: healthy) in force on
        `link`; returns what is in force."""
        if link not in self.links:
            raise KeyError(link)
        self._generation += 1
        state = {"generation": self._generation, **settings}
        write_atomically(self.control / f"{link}.json", json.dumps(state))
        applied = self.control / f"{link}.applied"
        wait_for(
            lambda: _generation(applied) >= state["generation"],
            timeout=timeout,
            interval=0.02,
            what=f"the network proxy to apply {state} on link {link}",
            abort=lambda: (
                None if self.process and self.process.running() else f"the network proxy exited (see {self.log})"
            ),
        )
        return state

    def heal(self, link: str) -> dict:
        return self.impair(link)


def _generation(path: Path) -> int:
    try:
        return int(path.read_text())
    except (OSError, ValueError):
        return -1
