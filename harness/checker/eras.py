"""A re-created source topic's eras: which topic holds each acknowledged record (0 the first, k the one the k-th
re-creation made), and the records whose rows the causes of a re-creation read (harness/checker/causes.py).

The idempotent producer writes a partition's records in send order (the ack log's), each at an offset higher than
those before it in the same topic. So in each partition the next topic begins at the first record acknowledged at
an offset not above one acknowledged before it in the current one: a retry may write a record sent before the
deletion there, and a record sent after the deletion may still land in the old topic while the broker has it. A
partition with no such point (nothing acknowledged in it on one side) is split at the deletion by send time.

Both passes read the acknowledged records in send order, a chunk at a time (the loaded log at once, or an engine's
pass over the log where it lies), each chunk as its partitions, offsets (-1: none acknowledged), send times and
positions (rising in send order): `Starts` finds where each era begins, `Needed` then the records the causes read
besides those with anything to say, so that the eras and offset bounds found from the loaded records alone are the
ones every record gives (`needed`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

import numpy as np

from harness.evidence.history import TOPIC_RECREATED

Chunk = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # partition, offset, sent ms, position, id


@dataclass(frozen=True)
class Recreation:
    """A re-creation of the source topic under `streamlet`: deleted, created again, and per partition the offset
    the streamlet had committed at the deletion (`read_to`)."""

    deleted_ms: int
    created_ms: int
    streamlet: str | None
    read_to: dict[int, int]


def recreations(history: list[dict], topic: str) -> list[Recreation]:
    """The re-creations of `topic` (history topic_recreated), in order."""
    return [
        Recreation(
            int(e["deleted_ms"]),
            int(e["created_ms"]),
            e.get("streamlet"),
            {int(p): int(o) for t, p, o in e.get("read_to", []) if t == topic},
        )
        for e in history
        if e["event"] == TOPIC_RECREATED and topic in e.get("topics", [])
    ]


def _by_partition(partition: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
    """Each partition of a chunk and its rows, in send order."""
    order = np.argsort(partition, kind="stable")
    parts, firsts = np.unique(partition[order], return_index=True)
    yield from zip(parts.tolist(), np.split(order, firsts[1:]))


@dataclass
class _Began:
    """One partition's first pass: where eras began by an offset going back, then (after the last) by send time."""

    back: list[int] = field(default_factory=list)
    timed: list[int] = field(default_factory=list)
    top: int = -1  # the current era's highest offset so far


class Starts:
    """The first pass: per partition, the position each era begins at (one per re-creation at most)."""

    def __init__(self, made: list[Recreation]):
        self.deleted_ms = [r.deleted_ms for r in made]
        self.partitions: dict[int, _Began] = {}

    def feed(self, partition: np.ndarray, offset: np.ndarray, sent_ms: np.ndarray, position: np.ndarray) -> None:
        for p, rows in _by_partition(partition):
            self._feed(self.partitions.setdefault(p, _Began()), offset[rows], sent_ms[rows], position[rows])

    def _feed(self, began: _Began, offset: np.ndarray, sent_ms: np.ndarray, position: np.ndarray) -> None:
        start = 0
        while len(began.back) < len(self.deleted_ms) and start < len(offset):
            rows = offset[start:]
            highest = np.maximum(began.top, np.maximum.accumulate(np.concatenate([[-1], rows[:-1]])))
            back = np.flatnonzero((rows >= 0) & (rows <= highest))
            end = start + (back[0] if len(back) else len(rows))
            self._timed(began, sent_ms[start:end], position[start:end])
            if not len(back):
                began.top = max(began.top, int(rows.max()))
                return
            began.back.append(int(position[end]))
            began.timed, began.top, start = [], -1, end  # the era it begins starts its own highest offset

    def _timed(self, began: _Began, sent_ms: np.ndarray, position: np.ndarray) -> None:
        """The next eras by send time, each from the one before: the first record sent at or after its deletion."""
        at = 0
        while len(began.back) + len(began.timed) < len(self.deleted_ms):
            later = np.flatnonzero(sent_ms[at:] >= self.deleted_ms[len(began.back) + len(began.timed)])
            if not len(later):
                return
            at += int(later[0])
            began.timed.append(int(position[at]))

    def found(self) -> dict[int, np.ndarray]:
        return {p: np.array(b.back + b.timed, np.int64) for p, b in self.partitions.items()}


def eras(starts: dict[int, np.ndarray], partition: np.ndarray, position: np.ndarray) -> np.ndarray:
    """Each record's era, from where each began in its partition (Starts.found)."""
    era = np.zeros(len(partition), np.int64)
    for p, at in starts.items():
        mine = partition == p
        era[mine] = np.searchsorted(at, position[mine], side="right")
    return era


@dataclass
class _Near:
    """One partition's second pass: its current era, the id of its last record with an offset, the era's highest
    offset so far and its record, and the records without an offset still waiting for the era's lowest after them."""

    era: int = 0
    last_known: int | None = None
    top: int = -1
    top_id: int | None = None
    waiting: list[list] = field(default_factory=list)  # [lowest offset after it so far, that record's id]


class Needed:
    """The second pass: the ids of the records the causes read besides those with anything to say. Each era's first
    record and the record with an offset before it (so the loaded records show where it begins); each record without
    an offset, and the records holding the highest offset before it and the lowest after it in its era (its bounds,
    causes._offset_bounds); and the records an era held at or above what the streamlet had committed at the next
    deletion (its unread ones, whose places a cached consumer may have served: causes._replaced)."""

    def __init__(self, starts: dict[int, np.ndarray], made: list[Recreation]):
        self.starts, self.read_to = starts, [r.read_to for r in made]
        self.partitions: dict[int, _Near] = {}
        self.ids: list[np.ndarray] = []

    def feed(self, partition, offset, sent_ms, position, ids) -> None:
        for p, rows in _by_partition(partition):
            near, at = self.partitions.setdefault(p, _Near()), self.starts.get(p, np.zeros(0, np.int64))
            era = np.searchsorted(at, position[rows], side="right")
            cuts = np.flatnonzero(np.diff(era)) + 1
            for segment in np.split(np.arange(len(rows)), cuts):
                self._segment(p, near, int(era[segment[0]]), offset[rows][segment], ids[rows][segment])

    def _segment(self, p: int, near: _Near, era: int, offset: np.ndarray, ids: np.ndarray) -> None:
        if era != near.era:
            self._settle(near)
            self._take(ids[:1])  # an era's first record and the one with an offset before it
            self._take([near.last_known] if near.last_known is not None else [])
            near.era, near.top, near.top_id = era, -1, None
        if era < len(self.read_to) and p in self.read_to[era]:
            self._take(ids[offset >= self.read_to[era][p]])
        known = offset >= 0
        placeless = np.flatnonzero(~known)
        if known.any():
            lowest = int(offset[known].min())
            for waiting in near.waiting:
                if lowest < waiting[0]:
                    waiting[:] = [lowest, int(ids[known][np.argmin(offset[known])])]
        if len(placeless):
            self._take(ids[placeless])
            self._bounds(near, offset, ids, known, placeless)
        if known.any():
            k = np.flatnonzero(known)
            if int(offset[k].max()) > near.top:
                near.top, near.top_id = int(offset[k].max()), int(ids[k[np.argmax(offset[k])]])
            near.last_known = int(ids[k[-1]])

    def _bounds(self, near: _Near, offset: np.ndarray, ids: np.ndarray, known: np.ndarray, placeless: np.ndarray):
        """The records holding the highest offset before each record without one, and (waiting, as the era may go
        on in the next chunk) the lowest after it."""
        n, none = len(offset), np.iinfo(np.int64).max
        highest = np.maximum.accumulate(np.where(known, offset, -1))
        at_highest = np.maximum.accumulate(np.where(known & (offset == highest), np.arange(n), -1))
        backwards = np.where(known, offset, none)[::-1]
        lowest = np.minimum.accumulate(backwards)  # from the end: the lowest at or after each row
        at_lowest = np.maximum.accumulate(np.where(backwards == lowest, np.arange(n), -1))
        for i in placeless.tolist():
            j = int(at_highest[i])
            if j >= 0 and offset[j] > near.top:
                self._take([ids[j]])
            elif near.top_id is not None:
                self._take([near.top_id])
            after = n - 2 - i  # the next row, counted from the end
            if after >= 0 and lowest[after] < none:
                near.waiting.append([int(lowest[after]), int(ids[n - 1 - at_lowest[after]])])
            else:
                near.waiting.append([none, None])

    def _settle(self, near: _Near) -> None:
        self._take([i for _, i in near.waiting if i is not None])
        near.waiting = []

    def _take(self, ids: Iterable) -> None:
        ids = np.asarray(list(ids) if not isinstance(ids, np.ndarray) else ids, np.int64)
        if len(ids):
            self.ids.append(ids)

    def found(self) -> np.ndarray:
        for near in self.partitions.values():
            self._settle(near)
        return np.unique(np.concatenate([np.zeros(0, np.int64), *self.ids]))


def source_eras(partition: np.ndarray, offset: np.ndarray, sent_ms: np.ndarray, made: list[Recreation]) -> np.ndarray:
    """The era of each of the acknowledged records given, in send order."""
    position = np.arange(len(partition))
    starts = Starts(made)
    starts.feed(partition, offset, sent_ms, position)
    return eras(starts.found(), partition, position)


def needed(made: list[Recreation], chunks: Callable[[], Iterator[Chunk]]) -> np.ndarray:
    """The ids `Needed` finds in the acknowledged records `chunks` gives (each call reads them again, in send order)."""
    starts = Starts(made)
    for partition, offset, sent_ms, position, _ in chunks():
        starts.feed(partition, offset, sent_ms, position)
    found = Needed(starts.found(), made)
    for chunk in chunks():
        found.feed(*chunk)
    return found.found()
