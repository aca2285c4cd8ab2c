"""Free loopback ports: the harness never assumes a well-known port is free.

Servers get ports below the kernel's ephemeral range, the one outgoing connections take their local ports from:
a broker stopped by a fault and started again on its port from that range can find a client's connection
holding it meanwhile ("Address already in use"). Below it, only another server could.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

EPHEMERAL = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST = 10_000  # well above the ports system services listen on
_pick = random.SystemRandom()  # never the seeded global generator: parallel test workers would pick alike


def _server_range() -> range | None:
    """The ports below the ephemeral range (None: too few there, where the range was lowered)."""
    try:
        low = int(EPHEMERAL.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32_768  # Linux's default
    return range(LOWEST, low) if low - LOWEST >= 1_000 else None


def _bound(host: str, port: int) -> socket.socket | None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind((host, port))
        return sock
    except OSError:
        sock.close()
        return None


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now."""
    return free_ports(1, host)[0]


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """`count` distinct free ports, below the ephemeral range where it can, all held open together so none
    repeats."""
    socks: list[socket.socket] = []
    candidates = _server_range()
    try:
        for port in _pick.sample(candidates, min(len(candidates), 20 * count)) if candidates else ():
            if len(socks) == count:
                break
            sock = _bound(host, port)
            if sock is not None:
                socks.append(sock)
        while len(socks) < count:  # the OS picks the rest (from the ephemeral range)
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            socks.append(sock)
            sock.bind((host, 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def accepts(port: int, host: str = "127.0.0.1", timeout: float = 0.5) -> bool:
    """Whether something listens on `port`: a TCP connection is accepted."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False
