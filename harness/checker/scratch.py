"""A check's temporary folder (the store's copies, a snapshot of a run still going), named with the checking
process's pid: a check stopped before it could remove its own (the live judge's child, killed as its run ends)
leaves one behind, and the next check removes the folders whose process is gone, so copies of stores many GB large
do not pile up over a night of runs."""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's: alive
        return True
    return True


@contextmanager
def scratch(kind: str) -> Iterator[Path]:
    """A folder harness-`kind`-PID-... in the temporary directory until the end; first, the same kind's folders of
    processes no longer running removed."""
    for left in Path(tempfile.gettempdir()).glob(f"harness-{kind}-*-*"):
        pid = left.name.split("-")[2]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(left, ignore_errors=True)
    with tempfile.TemporaryDirectory(prefix=f"harness-{kind}-{os.getpid()}-") as folder:
        yield Path(folder)
