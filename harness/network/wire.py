"""What the network proxy does to Kafka's requests on a link read as Kafka's frames (kafka-error): the rule in force,
each connection's requests picked by it and waiting for their response, and the log of what was done to each
(kafka-requests.jsonl in the run directory: docs/evidence.md)."""

from __future__ import annotations

import asyncio
import itertools
import json
import random
import struct
import time
from dataclasses import dataclass
from pathlib import Path

from harness.network.kafka_wire import Request, answered, produced, request_header, response_correlation

DROP, DELAY = "drop-response", "delay-response"
ACTIONS = (DROP, DELAY)
SEVERED = "lost-with-connection"  # in flight on a connection severed by a dropped response: its answer lost too
UNANSWERED = (DROP, SEVERED)  # the actions after which the client never had the broker's answer
DRAIN_S = 5.0
SEVER = "sever"  # what a judge returns for a frame dropped with its connection
_CONNECTIONS = itertools.count(1)


@dataclass
class Rule:
    """Which requests of a link are acted on, and how: those of `api`, a `share` of them, at most `count` (0: no
    limit), their response dropped (the connection then reset) or held `delay_ms`."""

    api: str
    action: str
    share: float = 1.0
    delay_ms: float = 0.0
    count: int = 0
    acted: int = 0

    @classmethod
    def of(cls, raw: dict) -> Rule:
        return cls(
            raw["api"],
            raw["action"],
            float(raw.get("share", 1.0)),
            float(raw.get("delay_ms", 0)),
            int(raw.get("count", 0)),
        )

    def picks(self, request: Request) -> bool:
        if request.api != self.api or (self.count and self.acted >= self.count) or random.random() >= self.share:
            return False
        self.acted += 1
        return True


class RequestLog:
    """kafka-requests.jsonl: one JSON line per request acted on, flushed at once."""

    def __init__(self, path: Path):
        self._file = path.open("a", encoding="utf-8")

    def write(self, entry: dict) -> None:
        self._file.write(json.dumps(entry) + "\n")
        self._file.flush()


async def read_frame(reader: asyncio.StreamReader) -> bytes:
    """The next Kafka frame, its size prefix included; at the end b"", or the bytes of a frame cut short."""
    try:
        head = await reader.readexactly(4)
    except asyncio.IncompleteReadError as exc:
        return exc.partial
    try:
        return head + await reader.readexactly(struct.unpack(">i", head)[0])
    except asyncio.IncompleteReadError as exc:
        return head + exc.partial


def _carried(frame: bytes, request: Request) -> list[dict] | None:
    """A produce request's partitions and the batches of each (None: another api, or not read)."""
    if request.api != "produce":
        return None
    try:
        return [
            {
                "topic": topic,
                "partition": partition,
                "batches": [
                    {
                        "records": b.count,
                        "crc": b.crc,
                        "producer_id": b.producer_id,
                        "producer_epoch": b.producer_epoch,
                        "base_sequence": b.base_sequence,
                    }
                    for b in batches
                ],
            }  # fmt: skip
            for topic, partition, batches in produced(frame, request)
        ]
    except (IndexError, struct.error):
        return None


def _answers(frame: bytes, request: Request) -> list[dict] | None:
    """A produce response's partitions: error code and the first record's offset (None: another api, not read)."""
    if request.api != "produce":
        return None
    try:
        return [
            {"topic": topic, "partition": partition, "error_code": error, "base_offset": base}
            for topic, partition, error, base in answered(frame, request)
        ]
    except (IndexError, struct.error):
        return None


class Wire:
    """One connection's requests of its rule's api, by correlation id, until their response passes: those the rule
    picked are acted on; when one's response is dropped the connection goes with it, and the responses of the others
    still in flight on it are read from the broker (for `DRAIN_S` at most) and logged as lost with the connection.
    A picked request whose response was lost with its connection, or never came, is given back to its rule's
    count."""

    def __init__(self, link, log: RequestLog | None):
        self.link, self.log, self.number = link, log, next(_CONNECTIONS)
        self.waiting: dict[int, tuple[Request, Rule | None, dict]] = {}

    def request(self, frame: bytes) -> float:
        """A request passing to the broker: tracked, picked or not (it always goes on, at once)."""
        rule = self.link.kafka
        if rule is None:
            return 0.0
        try:
            header = request_header(frame[4:])
        except (ValueError, struct.error):
            return 0.0
        if header.api != rule.api:
            return 0.0
        picked = rule.picks(header)
        self.waiting[header.correlation_id] = (
            header,
            rule if picked else None,
            {
                "ts_ms": int(time.time() * 1000),
                "link": self.link.name,
                "connection": self.number,
                "api": header.api,
                "api_version": header.api_version,
                "correlation_id": header.correlation_id,
                "client_id": header.client_id,
                "action": rule.action if picked else None,
                "delay_ms": rule.delay_ms if picked and rule.action == DELAY else None,
                "partitions": _carried(frame[4:], header),
            },
        )
        return 0.0

    def _answered(self, frame: bytes) -> tuple[Rule | None, dict] | None:
        """The rule that picked the request a response answers (None: none did) and its entry, with what the
        response says (None: not one tracked)."""
        if len(frame) < 8:
            return None
        found = self.waiting.pop(response_correlation(frame[4:]), None)
        if found is None:
            return None
        header, rule, entry = found
        entry["responded_ms"] = int(time.time() * 1000)
        entry["answered"] = _answers(frame[4:], header)
        return rule, entry

    def _write(self, entry: dict) -> None:
        if self.log is not None:
            self.log.write(entry)

    def response(self, frame: bytes) -> float | str:
        """A response passing to the client: SEVER where its request's rule drops it, else how long it is held."""
        found = self._answered(frame) if self.waiting else None
        if found is None or found[0] is None:
            return 0.0
        entry = found[1]
        self._write(entry)
        return SEVER if entry["action"] == DROP else entry["delay_ms"] / 1000

    async def drain(self, reader: asyncio.StreamReader) -> None:
        """After a sever: the broker's responses to the requests still in flight, logged as lost with it."""
        deadline = time.monotonic() + DRAIN_S
        while self.waiting and time.monotonic() < deadline:
            try:
                frame = await asyncio.wait_for(read_frame(reader), timeout=deadline - time.monotonic())
            except (asyncio.TimeoutError, ConnectionError, OSError):
                return
            if not frame:
                return
            found = self._answered(frame)
            if found is not None:
                rule, entry = found
                if rule is not None:  # picked, but lost with the connection before its rule acted on it
                    rule.acted -= 1
                self._write(entry | {"action": SEVERED, "delay_ms": None})

    def closed(self) -> None:
        for _, rule, _ in self.waiting.values():
            if rule is not None:
                rule.acted -= 1
        self.waiting.clear()
