"""Relays from a job's network namespace to the run's brokers: each listens on a loopback address inside (an address
the job names, or one a broker advertises) and joins every connection to its upstream outside, byte for byte.

A process's sockets keep the network namespace they were made in: the dialer thread is started before its process
leaves the machine's namespace and stays in it, so the connections it opens reach the brokers on the machine's
loopback, while the listeners, made after, are the namespace's own. Nothing but loopback is used on either side.
"""

from __future__ import annotations

import queue
import socket
import threading
from dataclasses import dataclass

CHUNK = 64 * 1024


@dataclass(frozen=True)
class Route:
    listen: tuple[str, int]  # inside the job's namespace
    upstream: tuple[str, int]  # on the machine's loopback


def address(text: str) -> tuple[str, int]:
    """ "host:port" (an IPv6 host in brackets) as a (host, port) pair."""
    host, _, port = text.rpartition(":")
    return host.strip("[]"), int(port)


class Dialer:
    """Opens connections from the namespace its thread was started in, for threads of any other."""

    def __init__(self):
        self._asked: queue.Queue = queue.Queue()
        threading.Thread(target=self._serve, name="dialer", daemon=True).start()

    def _serve(self) -> None:
        while True:
            upstream, answer = self._asked.get()
            try:
                answer.put(socket.create_connection(upstream, timeout=10))
            except OSError as exc:
                answer.put(exc)

    def connect(self, upstream: tuple[str, int]) -> socket.socket:
        answer: queue.Queue = queue.Queue(maxsize=1)
        self._asked.put((upstream, answer))
        found = answer.get()
        if isinstance(found, OSError):
            raise found
        found.settimeout(None)
        return found


def _pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy one direction until it ends, then end the other side's writing (a half-close, as TCP has it)."""
    try:
        while data := source.recv(CHUNK):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for end in (lambda: sink.shutdown(socket.SHUT_WR), source.close):
            try:
                end()
            except OSError:
                pass


def _join(client: socket.socket, route: Route, dialer: Dialer) -> None:
    try:
        upstream = dialer.connect(route.upstream)
    except OSError:
        client.close()  # the broker is down (a fault): the client sees its connection refused, as it would
        return
    threading.Thread(target=_pump, args=(upstream, client), daemon=True).start()
    _pump(client, upstream)


def _serve(listener: socket.socket, route: Route, dialer: Dialer) -> None:
    while True:
        client, _ = listener.accept()
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=_join, args=(client, route, dialer), daemon=True).start()


def listen(routes: list[Route], dialer: Dialer) -> list[socket.socket]:
    """Start a listener per route (in the calling thread's namespace), each serving in threads of its own."""
    listeners = []
    for route in routes:
        family = socket.AF_INET6 if ":" in route.listen[0] else socket.AF_INET
        listener = socket.socket(family, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(route.listen)
        listener.listen(64)
        threading.Thread(target=_serve, args=(listener, route, dialer), daemon=True).start()
        listeners.append(listener)
    return listeners
