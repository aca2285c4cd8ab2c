"""Reading a growing file line by line, each complete line once (a line being written waits)."""

from __future__ import annotations

from pathlib import Path


class LineTail:
    def __init__(self, path: Path):
        self.path = Path(path)
        self._position = 0

    def new_lines(self) -> list[bytes]:
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self._position)
                chunk = fh.read()
        except FileNotFoundError:
            return []
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self._position += len(complete)
        return complete.splitlines()
