"""Where a job's world mounts over a path that does not exist on the machine (an absolute folder the job names:
/data/orders, /tmp/checkpoint), a mount point stands while runs use it: an empty folder (or file) made for it, held
by each run using it (a shared lock), removed by the last one to let go. What a run made is noted in its
directory, so that `harness clean` removes what a killed harness left; nothing else of the machine is touched."""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path

MARK = "user.spark-kafka-harness.mount-point"


class MountPoints:
    def __init__(self, note: Path):
        self.note = note  # the run's list of what it made (JSON)
        self._held: dict[str, int] = {}  # path -> an open descriptor holding its shared lock

    def _noted(self) -> list[str]:
        try:
            return json.loads(self.note.read_text())
        except (OSError, ValueError):
            return []

    def _write(self, made: list[str]) -> None:
        self.note.parent.mkdir(parents=True, exist_ok=True)
        self.note.write_text(json.dumps(made, indent=2))

    def ensure(self, path: str, folder: bool) -> None:
        """A mount point at `path` (a folder, or a file), made with its missing parents where absent, and held.
        One another run made is this run's to remove too, if it is the last to let go (the mark says whose)."""
        target = Path(path)
        chain = [target, *target.parents]
        missing = [p for p in chain if not p.exists() and not p.is_symlink()]
        made = self._noted()
        for p in reversed(missing):  # the outermost first
            self._write(made := [*made, str(p)])  # noted before it is made: a kill between leaves no trace unnoted
            if p != target or folder:
                p.mkdir(exist_ok=True)
            else:
                p.touch(exist_ok=True)
            _mark(p)
        theirs = [str(p) for p in chain if p not in missing and _marked(p) and str(p) not in made]
        if theirs:
            self._write(made := [*made, *theirs])
        for p in [target, *target.parents]:  # whoever made them: a run's lock keeps any other from removing them
            if str(p) not in self._held:
                self._held[str(p)] = _hold(p)

    def release(self) -> list[str]:
        """Let go of every mount point; remove those this run made that no other run holds (the deepest first).
        Returns what it removed."""
        for fd in self._held.values():
            os.close(fd)
        self._held.clear()
        removed = remove_unheld(self._noted())
        self._write([p for p in self._noted() if os.path.lexists(p)])
        return removed


def _mark(path: Path) -> None:
    """Mark a mount point as the harness's (an extended attribute): whichever run lets go of it last removes it."""
    try:
        os.setxattr(path, MARK, b"1")
    except OSError:  # a file system without user attributes: only the run that made it removes it
        pass


def _marked(path: Path) -> bool:
    try:
        return MARK in os.listxattr(path)
    except OSError:
        return False


def _hold(path: Path) -> int:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    fcntl.flock(fd, fcntl.LOCK_SH)
    return fd


def remove_unheld(paths: list[str]) -> list[str]:
    """Remove each path that is empty and that no run holds (a lock taken at once, or it is left), deepest first."""
    removed = []
    for path in sorted(paths, key=lambda p: p.count("/"), reverse=True):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:  # gone already (the last run to let go removed it)
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            (os.rmdir if os.path.isdir(path) else _unlink_empty)(path)
            removed.append(path)
        except OSError:  # held by another run, or not empty: left as it is
            pass
        finally:
            os.close(fd)
    return removed


def _unlink_empty(path: str) -> None:
    if os.path.getsize(path):
        raise OSError(f"{path} is not empty")
    os.unlink(path)
