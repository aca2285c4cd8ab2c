"""What the network proxy does to Kafka's requests on a link read as Kafka's frames (kafka-error): the rule in force,
each connection's requests of its api and what the rule does to each, and the log of it (kafka-requests.jsonl in the run
directory: docs/evidence.md).

The actions: `drop-response` (the broker handles the request, its answer is dropped and the connection reset),
`delay-response` (the answer is held), `delay-request` (the request is held on its way: an EndTxn held keeps its
transaction open, its markers unwritten, from read_committed readers), `error-response` (produce only: the request
reaches the broker unroutable, each partition an index no topic has, so it appends nothing, and its answer, in its place
on the connection, comes back with the original partitions and `error_code`) and `error-after-append` (produce only:
appended, then answered `error_code`)."""

from __future__ import annotations

import asyncio
import itertools
import json
import random
import struct
import time
from dataclasses import dataclass
from pathlib import Path

from harness.network.kafka_wire import (
    Answer,
    Request,
    Sent,
    answered,
    produced,
    request_header,
    response_correlation,
    told,
    unroutable,
)

DROP, DELAY, ERROR, ERROR_AFTER = "drop-response", "delay-response", "error-response", "error-after-append"
HOLD = "delay-request"  # the request held before it reaches the broker (an EndTxn: its transaction's markers wait)
ACTIONS = (DROP, DELAY, HOLD, ERROR, ERROR_AFTER)
DELAYING = (DELAY, HOLD)
PRODUCE_ONLY = (ERROR, ERROR_AFTER)  # actions that rewrite a produce request or response
SEVERED = "lost-with-connection"  # in flight on a connection severed by a dropped response: its answer lost too
UNANSWERED = (DROP, SEVERED, ERROR_AFTER)  # the client never learned the broker appended: it sends the records again
DRAIN_S = 5.0
_CONNECTIONS = itertools.count(1)


@dataclass(frozen=True)
class Passage:
    """What becomes of a frame: held `held_s`, passed as `frame` instead (None: as it is), or dropped with its
    connection (`sever`)."""

    held_s: float = 0.0
    frame: bytes | None = None
    sever: bool = False


PASS = Passage()


@dataclass
class Rule:
    """Which requests of a link are acted on, and how: those of `api`, a `share` of them, at most `count` (0: no
    limit), by `action` (`delay_ms`, `error_code` as it needs)."""

    api: str
    action: str
    share: float = 1.0
    delay_ms: float = 0.0
    count: int = 0
    error_code: int = 0
    acted: int = 0

    @classmethod
    def of(cls, raw: dict) -> Rule:
        numbers = (float(raw.get("share", 1.0)), float(raw.get("delay_ms", 0)), int(raw.get("count", 0)))
        return cls(raw["api"], raw["action"], *numbers, int(raw.get("error_code", 0)))

    def picks(self) -> bool:
        if (self.count and self.acted >= self.count) or random.random() >= self.share:
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


def _sent(body: bytes, request: Request) -> list[Sent] | None:
    try:
        return produced(body, request) if request.api == "produce" else None
    except (IndexError, struct.error):
        return None


def _answers(body: bytes, request: Request) -> list[Answer] | None:
    try:
        return answered(body, request) if request.api == "produce" else None
    except (IndexError, struct.error):
        return None


def _carried(parts: list[Sent] | None) -> list[dict] | None:
    """A produce request's partitions and the batches of each, as the log holds them."""
    if parts is None:
        return None
    return [
        {
            "topic": p.topic,
            "partition": p.partition,
            "batches": [
                {
                    "records": b.count,
                    "crc": b.crc,
                    "producer_id": b.producer_id,
                    "producer_epoch": b.producer_epoch,
                    "base_sequence": b.base_sequence,
                }
                for b in p.batches
            ],
        }  # fmt: skip
        for p in parts
    ]


@dataclass
class _Waiting:
    """A request of the rule's api on its way: its header, its produce partitions, the rule that picked it (None:
    none did) and its log entry."""

    header: Request
    parts: list[Sent] | None
    rule: Rule | None
    entry: dict


class Wire:
    """One connection's requests of its rule's api, by correlation id, until their response passes: those the rule
    picked are acted on; when one's response is dropped the connection goes with it, and the responses of the others
    still in flight on it are read from the broker (for `DRAIN_S` at most) and logged as lost with the connection.
    A picked request whose response was lost with its connection, or never came, is given back to its rule's
    count."""

    def __init__(self, link, log: RequestLog | None):
        self.link, self.log, self.number = link, log, next(_CONNECTIONS)
        self.waiting: dict[int, _Waiting] = {}

    def request(self, frame: bytes) -> Passage:
        """A request passing to the broker, at once: tracked, picked or not; made unroutable for error-response."""
        rule = self.link.kafka
        if rule is None:
            return PASS
        try:
            header = request_header(frame[4:])
        except (ValueError, struct.error):
            return PASS
        if header.api != rule.api:
            return PASS
        parts = _sent(frame[4:], header)
        picked = rule.picks() and (rule.action not in PRODUCE_ONLY or bool(parts))
        entry = {
            "ts_ms": int(time.time() * 1000),
            "link": self.link.name,
            "connection": self.number,
            "api": header.api,
            "api_version": header.api_version,
            "correlation_id": header.correlation_id,
            "client_id": header.client_id,
            "action": rule.action if picked else None,
            "delay_ms": rule.delay_ms if picked and rule.action in DELAYING else None,
            "error_code": rule.error_code if picked and rule.action in PRODUCE_ONLY else None,
            "partitions": _carried(parts),
        }
        self.waiting[header.correlation_id] = _Waiting(header, parts, rule if picked else None, entry)
        if picked and rule.action == ERROR:
            return Passage(frame=frame[:4] + unroutable(frame[4:], parts))
        return Passage(held_s=rule.delay_ms / 1000) if picked and rule.action == HOLD else PASS

    def _answered(self, frame: bytes) -> tuple[_Waiting, list[Answer] | None] | None:
        """The request a response answers and what the response says (None: not one tracked)."""
        if len(frame) < 8:
            return None
        waiting = self.waiting.pop(response_correlation(frame[4:]), None)
        if waiting is None:
            return None
        answers = _answers(frame[4:], waiting.header)
        waiting.entry["responded_ms"] = int(time.time() * 1000)
        waiting.entry["answered"] = (
            None if answers is None else [
                {"topic": a.topic, "partition": a.partition, "error_code": a.error_code, "base_offset": a.base_offset}
                for a in answers
            ]
        )  # fmt: skip
        return waiting, answers

    def _write(self, entry: dict) -> None:
        if self.log is not None:
            self.log.write(entry)

    def response(self, frame: bytes) -> Passage:
        """A response passing to the client: dropped with its connection, held, or told its rule's error."""
        found = self._answered(frame) if self.waiting else None
        if found is None or found[0].rule is None:
            return PASS
        waiting, answers = found
        self._write(waiting.entry)
        action = waiting.entry["action"]
        if action == DROP:
            return Passage(sever=True)
        if action == DELAY:
            return Passage(held_s=waiting.rule.delay_ms / 1000)
        if answers is None or action == HOLD:
            return PASS
        parts = waiting.parts if action == ERROR else None
        return Passage(frame=frame[:4] + told(frame[4:], answers, waiting.rule.error_code, parts))

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
                waiting = found[0]
                if waiting.rule is not None:  # picked, but lost with the connection before its rule acted on it
                    waiting.rule.acted -= 1
                self._write(waiting.entry | {"action": SEVERED, "delay_ms": None, "error_code": None})

    def closed(self) -> None:
        for waiting in self.waiting.values():
            if waiting.rule is not None:
                waiting.rule.acted -= 1
        self.waiting.clear()
