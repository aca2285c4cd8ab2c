"""Small readers of a run directory for the end-to-end tests: independent of the checker, so they can check it."""

from __future__ import annotations

import json
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


def read_topic_dump(path) -> pd.DataFrame:
    """A topics/<topic>.jsonl dump as partition, offset, key, seq, event_time_ms."""
    rows = []
    with open(path) as fh:
        for line in fh:
            r = json.loads(line)
            v = r["value"]
            rows.append((r["partition"], r["offset"], v.get("key"), v.get("seq"), int(pd.Timestamp(v["event_time"]).value // 1_000_000)))
    return pd.DataFrame(rows, columns=["partition", "offset", "key", "seq", "event_time_ms"])
