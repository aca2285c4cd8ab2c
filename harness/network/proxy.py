"""The network proxy process: TCP forwarding between clients and brokers, with faults a link at a time.

    python -m harness.network.proxy CONFIG.json

CONFIG names the routes (link, listen port, upstream port) and the control folder. Each broker advertises
one client listener per link whose address is the route's listen port, so the Kafka metadata a link's
clients get keeps them on that link. A link's state is what `control/<link>.json` says (written whole by the
harness, harness.network.links); the proxy reads it when it changes and answers with
`control/<link>.applied` holding the generation it applied, so the harness knows when a fault is in force.

    {"generation": 3, "delay_ms": 200, "jitter_ms": 50}     every chunk waits that long (order kept)
    {"generation": 4, "bytes_per_s": 20000}                 both directions share out that rate
    {"generation": 5, "partition": true}                    nothing is read or forwarded; new connections hang
    {"generation": 6, "reset": true}                        every connection is reset (RST), new ones too
    {"generation": 7}                                       healthy
    {"generation": 8, "kafka": {"api": "produce", "action": "drop-response", "share": 0.5, "count": 3}}

The last acts on Kafka's requests (harness/network/wire.py), on a link whose route says `wire`: each of its
connections is read as Kafka's frames from its start, and a share of the api's requests (at most `count`; 0: no
limit) have their response dropped, the connection then reset (the client sees its request in flight cut off, as
when a broker's answer is lost), held `delay_ms` (the responses after it wait too: Kafka answers in order), or
answered with an error, instead of appending or after it. Each request acted on is a line of the run's
kafka-requests.jsonl.

Loopback only; no kernel feature (this machine's kernel has no netem qdisc).
"""

from __future__ import annotations

import asyncio
import json
import random
import signal
import socket
import struct
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness.network.wire import PASS, RequestLog, Rule, Wire, read_frame

CHUNK = 64 * 1024
POLL_S = 0.05


@dataclass
class LinkState:
    """What a link does to its traffic now, and the connections it carries."""

    name: str
    generation: int = 0
    delay_ms: float = 0.0
    jitter_ms: float = 0.0
    bytes_per_s: float | None = None
    partition: bool = False
    reset: bool = False
    open: asyncio.Event = field(default_factory=asyncio.Event)
    connections: set = field(default_factory=set)  # the transports of both ends of every connection
    bucket_at: float = 0.0  # the bandwidth limit: when the link's next byte may go (monotonic seconds)
    forwarded: int = 0
    kafka: Rule | None = None  # what it does to Kafka's requests (a link read as Kafka's frames)

    def apply(self, settings: dict) -> None:
        self.generation = int(settings.get("generation", self.generation))
        self.delay_ms = float(settings.get("delay_ms", 0))
        self.jitter_ms = float(settings.get("jitter_ms", 0))
        self.bytes_per_s = float(settings["bytes_per_s"]) if settings.get("bytes_per_s") else None
        self.partition = bool(settings.get("partition"))
        self.reset = bool(settings.get("reset"))
        self.kafka = Rule.of(settings["kafka"]) if settings.get("kafka") else None
        if self.partition:
            self.open.clear()
        else:
            self.open.set()
        if self.reset:
            for transport in list(self.connections):
                _reset(transport)

    def pieces(self, data: bytes) -> list[bytes]:
        """`data` in the pieces the link's rate lets through: at most a tenth of a second's worth each (a chunk
        read whole, up to 64 KiB, would otherwise go at once, seconds' worth of a slow link's rate)."""
        if not self.bytes_per_s:
            return [data]
        step = max(1, int(self.bytes_per_s / 10))
        return [data[i : i + step] for i in range(0, len(data), step)]

    async def pace(self, size: int) -> None:
        """Wait until `size` more bytes fit the link's rate (a token bucket with no burst beyond one piece)."""
        if not self.bytes_per_s:
            return
        now = time.monotonic()
        self.bucket_at = max(self.bucket_at, now) + size / self.bytes_per_s
        wait = self.bucket_at - now - size / self.bytes_per_s
        if wait > 0:
            await asyncio.sleep(wait)

    def release_at(self, last: float, held_s: float = 0.0) -> float:
        """When a chunk read now may be written: now plus the delay (and jitter) and what a rule holds it, never
        before the one before it."""
        if not self.delay_ms and not held_s:
            return last
        delay = self.delay_ms + random.uniform(-self.jitter_ms, self.jitter_ms)
        return max(last, time.monotonic() + max(0.0, delay) / 1000 + held_s)


def _reset(transport) -> None:
    """Close with SO_LINGER 0: the peer gets a RST, not a FIN."""
    sock = transport.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
    transport.abort()


async def _chunk(reader: asyncio.StreamReader) -> bytes:
    return await reader.read(CHUNK)


async def _pipe(
    link: LinkState, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, read=_chunk, judge=None, drain=None
) -> None:
    """One direction of one connection: read (a chunk, or with `read` a Kafka frame), wait out the link's fault
    and what `judge` says of it (a Passage: held, passed rewritten, or dropped with the connection reset and `drain`
    given what the reader still sends), write, in order."""
    last = 0.0
    pending: asyncio.Queue = asyncio.Queue()

    async def deliver() -> None:
        while True:
            at, data = await pending.get()
            if data is None:
                return
            wait = at - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            await link.open.wait()
            writer.write(data)
            await writer.drain()
            link.forwarded += len(data)

    sender = asyncio.create_task(deliver())
    try:
        while True:
            await link.open.wait()  # a partition: nothing is read, so the sender's buffers fill and it hangs
            data = await read(reader)
            if not data:
                break
            passage = judge(data) if judge is not None else PASS
            if passage.sever:
                _reset(writer.transport)
                if drain is not None:
                    await drain(reader)
                break
            for piece in link.pieces(passage.frame or data):
                await link.pace(len(piece))
                last = link.release_at(last, passage.held_s)
                pending.put_nowait((last, piece))
        pending.put_nowait((0.0, None))
        await sender
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):
        pass
    finally:
        sender.cancel()


async def _connection(link: LinkState, route: dict, client_reader, client_writer, log) -> None:
    client = client_writer.transport
    link.connections.add(client)
    try:
        if link.reset:
            _reset(client)
            return
        await link.open.wait()  # during a partition a new connection is accepted and then hangs
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", route["upstream"])
        except OSError:
            _reset(client)  # the broker is down: the client sees the connection refused, as without the proxy
            return
        link.connections.add(up_writer.transport)
        try:
            if route.get("wire"):
                wire = Wire(link, log)
                try:
                    await asyncio.gather(
                        _pipe(link, client_reader, up_writer, read_frame, wire.request),
                        _pipe(link, up_reader, client_writer, read_frame, wire.response, wire.drain),
                    )
                finally:
                    wire.closed()
            else:
                await asyncio.gather(_pipe(link, client_reader, up_writer), _pipe(link, up_reader, client_writer))
        finally:
            link.connections.discard(up_writer.transport)
            up_writer.transport.abort()
    except asyncio.CancelledError:
        # The proxy is stopping: asyncio.run cancels every task, the pipes of a connection before the connection,
        # which then ends with their CancelledError as its error (logged as a traceback) unless it ends here.
        pass
    finally:
        link.connections.discard(client)
        client.abort()


async def _watch_control(links: dict[str, LinkState], control: Path) -> None:
    """Apply each link's control file when it changes, and say so in `<link>.applied`."""
    seen: dict[str, tuple] = {}
    while True:
        for name, link in links.items():
            path = control / f"{name}.json"
            try:
                info = path.stat()
                stamp = (info.st_ino, info.st_mtime_ns)
                if seen.get(name) == stamp:
                    continue
                settings = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            seen[name] = stamp
            link.apply(settings)
            print(
                json.dumps(
                    {
                        "ts_ms": int(time.time() * 1000),
                        "link": name,
                        "applied": settings,
                        "connections": len(link.connections),
                        "forwarded_bytes": link.forwarded,
                    }
                ),
                flush=True,
            )
            applied = control / f"{name}.applied"
            applied.with_suffix(".tmp").write_text(str(link.generation))
            applied.with_suffix(".tmp").replace(applied)
        await asyncio.sleep(POLL_S)


async def serve(config: dict) -> None:
    control = Path(config["control"])
    links: dict[str, LinkState] = {}
    servers = []
    log = RequestLog(Path(config["requests"])) if config.get("requests") else None
    for route in config["routes"]:
        link = links.setdefault(route["link"], LinkState(route["link"]))
        link.open.set()
        handler = (lambda state, r: lambda rd, w: _connection(state, r, rd, w, log))(link, route)
        servers.append(await asyncio.start_server(handler, "127.0.0.1", route["listen"], reuse_address=True))
    print(json.dumps({"ts_ms": int(time.time() * 1000), "listening": config["routes"]}), flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    watcher = asyncio.create_task(_watch_control(links, control))
    await stop.wait()
    watcher.cancel()
    for server in servers:
        server.close()


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m harness.network.proxy CONFIG.json", file=sys.stderr)
        return 2
    asyncio.run(serve(json.loads(Path(argv[0]).read_text())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
