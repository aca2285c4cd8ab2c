"""Reading one step ahead: the next segment, block or batch read in a thread while the caller converts or counts
the one it has (Arrow's reading and decompression, SQLite's and the columns' making release the GIL, so the two
run on two cores). One item waits at most: what is held is two items, not the table."""

from __future__ import annotations

import queue
import threading
from typing import Iterator, TypeVar

import pyarrow as pa

T = TypeVar("T")


def read_ahead(items: Iterator[T]) -> Iterator[T]:
    """The items, the next one read in a thread while the caller works on this one."""
    ready: queue.Queue = queue.Queue(maxsize=1)
    stop = threading.Event()
    end = object()

    def offer(item) -> bool:
        """Put `item` when there is room, unless the caller has stopped reading (False)."""
        while not stop.is_set():
            try:
                ready.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def read() -> None:
        try:
            for item in items:
                if not offer(item):
                    return
            offer(end)
        except BaseException as exc:  # the caller raises it
            offer(exc)

    reader = threading.Thread(target=read, name="read-ahead", daemon=True)
    reader.start()
    try:
        while (item := ready.get()) is not end:
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        reader.join()
        pa.default_memory_pool().release_unused()  # what was read is freed: Arrow's pool kept it besides
