"""A driver's scratch folder (spark.local.dir), cleared at each start of a driver of what a killed predecessor
left, but for what a driver still running uses: a zombie driver set aside beside its successor (zombie-driver)
lists its entries in `.kept`, and the next start leaves those (and only that start: the list is then gone)."""

from __future__ import annotations

import shutil
from pathlib import Path

KEPT = ".kept"  # the entries of a scratch folder a driver still running uses, one per line


def keep_present(folder: Path) -> None:
    """List what `folder` holds now as in use: the next clear leaves it."""
    if folder.is_dir():
        names = sorted(p.name for p in folder.iterdir() if p.name != KEPT)
        (folder / KEPT).write_text("".join(f"{name}\n" for name in names))


def clear(folder: Path) -> None:
    """Empty `folder` (made if missing) but for the entries its `.kept` lists, and forget the list."""
    kept_file = folder / KEPT
    kept = set(kept_file.read_text().split()) if kept_file.is_file() else set()
    kept_file.unlink(missing_ok=True)
    if folder.is_dir():
        for entry in folder.iterdir():
            if entry.name in kept:
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
    folder.mkdir(parents=True, exist_ok=True)
