"""Kafka's wire format, the little the harness reads of it: a record batch's header (format v2: a log segment's,
or a produce request's records), a request's header (api, version, correlation id, client id), a response's
correlation id, what a produce request carries (each partition's batches) and what its response says (each
partition's error and first offset). Plain struct reads, no client
library: the network proxy (harness/network/proxy.py) reads requests as they pass, producers.csv is read from the
brokers' log segments (harness/evidence/producers.py)."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Iterator

_HEAD = struct.Struct(">qi")  # base offset, batch length (of what follows)
_BATCH = struct.Struct(">ibIhiqqqhii")  # leader epoch, magic, crc, attributes, last offset delta, ..., record count
TRANSACTIONAL = 0x10  # attributes bit 4
CONTROL = 0x20  # attributes bit 5: the batch holds one control record, a transaction marker
COMMIT, ABORT = "commit", "abort"  # a control record's key: version, then its type (0 abort, 1 commit)
# The apis a fault may name, by their keys (Kafka's protocol guide), and the first version of each whose request
# header is flexible (v2: tagged fields after the client id) and whose body uses compact strings and arrays.
APIS = {
    "produce": (0, 9),
    "fetch": (1, 12),
    "list-offsets": (2, 6),
    "metadata": (3, 9),
    "offset-commit": (8, 8),
    "offset-fetch": (9, 6),
    "find-coordinator": (10, 3),
    "heartbeat": (12, 4),
    "init-producer-id": (22, 2),
    "add-partitions-to-txn": (24, 3),
    "end-txn": (26, 3),
    "txn-offset-commit": (28, 3),
}
API_NAMES = {key: name for name, (key, _) in APIS.items()}
TOPIC_IDS_FROM = 13  # produce v13 names a topic by its id (16 bytes), not its name
NO_PARTITION = 2**31 - 1  # a partition index no topic has


@dataclass(frozen=True)
class Batch:
    """A record batch's header; `marker` is a control batch's transaction marker ("" for records)."""

    base_offset: int
    last_offset: int
    crc: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    transactional: bool
    base_ms: int
    max_ms: int
    count: int
    marker: str


def uvarint(data: bytes, pos: int) -> tuple[int, int]:
    """An unsigned varint at `pos`: its value and the position after it."""
    shift = value = 0
    while True:
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos += 1
        if not byte & 0x80:
            return value, pos
        shift += 7


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    raw, pos = uvarint(data, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def _marker(data: bytes, pos: int) -> str:
    """The type of the control record at `pos` (its length, attributes, timestamp and offset deltas, key length,
    then the key: version int16, type int16)."""
    _, pos = _varint(data, pos)
    _, pos = _varint(data, pos + 1)
    _, pos = _varint(data, pos)
    _, pos = _varint(data, pos)
    (kind,) = struct.unpack_from(">h", data, pos + 2)
    return COMMIT if kind == 1 else ABORT if kind == 0 else f"control-{kind}"


def record_batches(data: bytes) -> Iterator[Batch]:
    """Each record batch of `data` (format v2). Stops at the end, or at a batch cut short (a segment still being
    written) or of another format."""
    pos = 0
    while pos + _HEAD.size + _BATCH.size <= len(data):
        base, length = _HEAD.unpack_from(data, pos)
        if length <= 0 or pos + _HEAD.size + length > len(data):
            return
        _, magic, crc, attributes, last_delta, base_ms, max_ms, producer, epoch, sequence, count = _BATCH.unpack_from(
            data, pos + _HEAD.size
        )
        if magic != 2:
            return
        marker = _marker(data, pos + _HEAD.size + _BATCH.size) if attributes & CONTROL else ""
        yield Batch(
            base, base + last_delta, crc, producer, epoch, sequence, bool(attributes & TRANSACTIONAL), base_ms, max_ms,
            count, marker,
        )  # fmt: skip
        pos += _HEAD.size + length


@dataclass(frozen=True)
class Request:
    """A request's header, and where its body begins."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str
    body_at: int

    @property
    def api(self) -> str:
        return API_NAMES.get(self.api_key, f"api-{self.api_key}")

    @property
    def flexible(self) -> bool:
        key = self.api
        return key in APIS and self.api_version >= APIS[key][1]


def _tagged(data: bytes, pos: int) -> int:
    """Past a flexible structure's tagged fields."""
    count, pos = uvarint(data, pos)
    for _ in range(count):
        _, pos = uvarint(data, pos)
        size, pos = uvarint(data, pos)
        pos += size
    return pos


def request_header(frame: bytes) -> Request:
    """The header of a request frame (its size prefix removed). ValueError where it is too short."""
    if len(frame) < 10:
        raise ValueError(f"a request of {len(frame)} bytes")
    key, version, correlation, length = struct.unpack_from(">hhih", frame, 0)
    client = frame[10 : 10 + length].decode(errors="replace") if length > 0 else ""
    request = Request(key, version, correlation, client, 10 + max(length, 0))
    if request.flexible:
        request = Request(key, version, correlation, client, _tagged(frame, request.body_at))
    return request


def response_correlation(frame: bytes) -> int:
    """The correlation id of a response frame (its size prefix removed): the request it answers."""
    return struct.unpack_from(">i", frame, 0)[0]


class _Reader:
    """Reads a body's fields in order from `pos`, in its version's encoding (compact where flexible)."""

    def __init__(self, frame: bytes, pos: int, flexible: bool):
        self.data, self.pos, self.flexible = frame, pos, flexible

    def fixed(self, fmt: str) -> int:
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return value

    def length(self, fmt: str) -> int:
        """A string's, bytes' or array's length (-1: null)."""
        if self.flexible:
            value, self.pos = uvarint(self.data, self.pos)
            return value - 1
        return self.fixed(fmt)

    def bytes(self, fmt: str = ">h") -> bytes:
        size = self.length(fmt)
        value = self.data[self.pos : self.pos + max(size, 0)]
        self.pos += max(size, 0)
        return value

    def topic(self, version: int) -> str:
        """A topic's name, or from produce v13 its id (in hex)."""
        if version < TOPIC_IDS_FROM:
            return self.bytes().decode(errors="replace")
        self.pos += 16
        return self.data[self.pos - 16 : self.pos].hex()

    def tags(self) -> None:
        if self.flexible:
            self.pos = _tagged(self.data, self.pos)


@dataclass(frozen=True)
class Sent:
    """A partition's part of a produce request: its topic, index, batches, and where its index is in the frame."""

    topic: str
    partition: int
    batches: list[Batch]
    at: int


@dataclass(frozen=True)
class Answer:
    """A partition's part of a produce response: its topic, index, error code, the offset the broker gave its first
    record (-1: it appended none), and where its index is in the frame (its error code follows)."""

    topic: str
    partition: int
    error_code: int
    base_offset: int
    at: int


def produced(frame: bytes, request: Request) -> list[Sent]:
    """What a produce request (v3 and later) carries: each partition's topic (a topic id in hex from v13), index and
    record batches."""
    body = _Reader(frame, request.body_at, request.flexible)
    body.bytes()  # transactional id
    body.fixed(">h")  # acks
    body.fixed(">i")  # timeout
    found = []
    for _ in range(body.length(">i")):
        topic = body.topic(request.api_version)
        for _ in range(body.length(">i")):
            at = body.pos
            partition = body.fixed(">i")
            found.append(Sent(topic, partition, list(record_batches(body.bytes(">i"))), at))
            body.tags()
        body.tags()
    return found


def answered(frame: bytes, request: Request) -> list[Answer]:
    """What a produce response (v3 and later) says of each partition."""
    body = _Reader(frame, 4, request.flexible)
    body.tags()  # response header v1
    found = []
    for _ in range(body.length(">i")):
        topic = body.topic(request.api_version)
        for _ in range(body.length(">i")):
            at = body.pos
            partition, error, base = body.fixed(">i"), body.fixed(">h"), body.fixed(">q")
            found.append(Answer(topic, partition, error, base, at))
            body.fixed(">q")  # log append time
            if request.api_version >= 5:
                body.fixed(">q")  # log start offset
            if request.api_version >= 8:
                for _ in range(body.length(">i")):  # record errors
                    body.fixed(">i")
                    body.bytes()
                    body.tags()
                body.bytes()  # error message
            body.tags()
        body.tags()
    return found


def unroutable(frame: bytes, parts: list[Sent]) -> bytes:
    """A produce request whose partitions no broker has (the i-th the index NO_PARTITION - i): it appends nothing and
    answers each with an error, in its place among the connection's responses."""
    data = bytearray(frame)
    for i, part in enumerate(parts):
        struct.pack_into(">i", data, part.at, NO_PARTITION - i)
    return bytes(data)


def told(frame: bytes, answers: list[Answer], error_code: int, parts: list[Sent] | None = None) -> bytes:
    """A produce response whose partitions answer `error_code`; given the `parts` of the request made unroutable,
    each named again by its own index."""
    data = bytearray(frame)
    for answer in answers:
        index = NO_PARTITION - answer.partition
        partition = parts[index].partition if parts is not None and 0 <= index < len(parts) else answer.partition
        struct.pack_into(">ih", data, answer.at, partition, error_code)
    return bytes(data)
