"""A run still going, read as one snapshot by a check that reads its evidence in several passes (naming every record,
the engine's count, the notable records' rows): each pass must see the same rows while the run's writers go on
appending. Within `taken()`: a folder of segments lists what it listed first and a segment gives the batches it gave
first (contract/segments.py), a JSON-lines file the bytes it had when first read, and an SQLite store is read from a
copy made when it is first read (SQLite's online backup: one consistent state of every table)."""

from __future__ import annotations

import sqlite3
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from contract.segments import as_first_read
from harness.checker.scratch import scratch

_state: dict = {"folder": None, "copies": {}, "lengths": {}}  # shared with the reader threads
_lock = threading.Lock()


@contextmanager
def taken() -> Iterator[None]:
    """The run directory as first read, until the end (its copies removed then)."""
    with scratch("snapshot") as folder, as_first_read():
        _state.update(folder=folder, copies={}, lengths={})
        try:
            yield
        finally:
            _state.update(folder=None, copies={}, lengths={})


def database(db: Path) -> Path:
    """Where to read the SQLite store `db` from: its copy within a snapshot (made on first use), else itself."""
    folder = _state["folder"]
    if folder is None or not Path(db).is_file():
        return db
    with _lock:  # the engine's readers may ask for one store from two threads
        copy = _state["copies"].get(str(db))
        if copy is None:
            copy = folder / f"{len(_state['copies'])}-{Path(db).name}"
            source, target = sqlite3.connect(f"file:{db}?mode=ro", uri=True), sqlite3.connect(copy)
            try:
                source.backup(target)
            finally:
                source.close()
                target.close()
            _state["copies"][str(db)] = copy
    return copy


def as_first(path: Path, text: bytes) -> bytes:
    """A JSON-lines file's bytes as first read within a snapshot (`text`: as read now)."""
    lengths = _state["lengths"]
    if _state["folder"] is None:
        return text
    return text[: lengths.setdefault(str(Path(path).resolve()), len(text))]
