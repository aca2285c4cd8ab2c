"""What a process costs: the resident memory of a process and of the whole session it leads (a driver is a
Python process plus its JVM), and the disk a directory tree really takes (allocated blocks)."""

from __future__ import annotations

import os
from pathlib import Path

from harness.process.supervisor import ProcessRecord, session_members


def rss_bytes(pid: int) -> int | None:
    """Resident set size of `pid`, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def session_rss_bytes(record: ProcessRecord) -> int | None:
    """The summed RSS of every live process in the recorded process's session, None when none is left."""
    sizes = [size for size in map(rss_bytes, session_members(record)) if size is not None]
    return sum(sizes) if sizes else None


def entries_bytes(folder: Path) -> dict[str, int]:
    """Disk allocated to each top-level entry of `folder` (tree_bytes); an entry gone while we looked is left out."""
    found = {}
    for entry in os.scandir(folder):
        try:
            found[entry.name] = tree_bytes(Path(entry.path))
        except OSError:
            continue
    return found


def tree_bytes(path: Path) -> int:
    """Disk allocated to `path`, a file or a whole tree (files that vanish while walking are skipped: a broker
    rolls segments)."""
    if not Path(path).is_dir():
        return os.lstat(path).st_blocks * 512
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_blocks * 512
            except OSError:
                continue
    return total
