"""Writing a file whole: readers (a report viewer, a later check, `harness clean`) never see half of it."""

from __future__ import annotations

import os
from pathlib import Path


def write_atomically(path: Path, text: str) -> Path:
    """Write `text` to a temporary file beside `path`, then rename it over `path`."""
    path = Path(path)
    partial = path.with_name(path.name + ".tmp")
    partial.write_text(text)
    os.replace(partial, path)
    return path
