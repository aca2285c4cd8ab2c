"""Small readers of a run directory for the end-to-end tests (the checker proper comes later)."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

import pandas as pd


def acked(run_dir: Path) -> set[tuple[str, int]]:
    acks = pd.read_csv(Path(run_dir) / "acks.csv")
    ok = acks[acks.status == "acked"]
    return set(zip(ok.key, ok.seq.astype(int)))


def egress_counts(run_dir: Path, streamlet: str, table: str, columns: str = "key, seq") -> Counter:
    """How often each row (of the given columns) appears in an SQLite egress table."""
    with sqlite3.connect(Path(run_dir) / "egress" / f"{streamlet}.sqlite") as db:
        return Counter(tuple(row) for row in db.execute(f"SELECT {columns} FROM {table}"))
