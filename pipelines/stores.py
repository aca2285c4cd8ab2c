"""The egress's external store: SQLite in the run directory, or PostgreSQL given a URL.

One set of tables per egress streamlet (an SQLite file each, or a PostgreSQL schema each); their names and
columns are the run directory's contract (contract/egress.py). All SQL is written with `?` placeholders and
works on both databases.
"""

from __future__ import annotations

import re
import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable

from contract.egress import PRIMARY_KEYS, STATE, TABLES, UPSERT_KEY

_TYPES = {
    "key": "TEXT",
    "payload": "TEXT",
    "batches": "TEXT",
    "topic": "TEXT",
    "query": "TEXT",
    "kafka_partition": "INTEGER",
}


def now_ms() -> int:
    return int(time.time() * 1000)


def _ddl(table: str, columns: tuple[str, ...], primary_key: tuple[str, ...] = ()) -> str:
    cols = ", ".join(f"{c} {_TYPES.get(c, 'BIGINT')}" for c in columns)
    pk = f", PRIMARY KEY ({', '.join(primary_key)})" if primary_key else ""
    return f"CREATE TABLE IF NOT EXISTS {table} ({cols}{pk})"


def egress_store(paths, postgres_url: str | None = None) -> "Store":
    """An egress's store (`paths`: its DriverPaths): its SQLite file in the run directory, or its schema in
    PostgreSQL."""
    return Store(sqlite_path=Path(paths.egress_db), postgres_url=postgres_url, namespace=paths.store_namespace)


class Store:
    """A connection per use (cheap here), transactions as context managers."""

    def __init__(self, sqlite_path: Path | None = None, postgres_url: str | None = None, namespace: str = ""):
        self.sqlite_path = sqlite_path
        self.postgres_url = postgres_url
        # PostgreSQL: one schema per (run, streamlet); SQLite: one file per streamlet.
        self.schema = re.sub(r"[^a-z0-9_]", "_", namespace.lower()) if postgres_url else ""

    def table(self, name: str) -> str:
        return f"{self.schema}.{name}" if self.schema else name

    def _connect(self):
        if self.postgres_url:
            import psycopg

            return psycopg.connect(self.postgres_url)
        self.sqlite_path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.sqlite_path, timeout=30, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        return conn

    @contextmanager
    def transaction(self):
        """A cursor-like `execute(sql, params)` / `executemany` inside one transaction."""
        conn = self._connect()
        try:
            if self.postgres_url:
                with conn.transaction():
                    yield _Tx(conn.cursor(), "%s")
            else:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield _Tx(conn.cursor(), "?")
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
        finally:
            conn.close()

    def create_tables(self, upsert_key: bool, only: tuple[str, ...] | None = None) -> None:
        with self.transaction() as tx:
            if self.schema:
                tx.execute(f"CREATE SCHEMA IF NOT EXISTS {self.schema}")
            for table, columns in TABLES.items():
                if only is not None and table not in only:
                    continue
                key = UPSERT_KEY if table == STATE and upsert_key else PRIMARY_KEYS.get(table, ())
                tx.execute(_ddl(self.table(table), columns, key))

    def copy_to(self, target: "Store", chunk_rows: int = 50_000) -> dict[str, int]:
        """Copy every table into `target` (a PostgreSQL egress into the run directory's SQLite file,
        where the checker reads it); returns the rows copied per table."""
        target.create_tables(upsert_key=False)
        copied = {}
        with self.transaction() as source, target.transaction() as tx:
            for table, columns in TABLES.items():
                source.execute(f"SELECT {', '.join(columns)} FROM {self.table(table)}")
                copied[table] = 0
                while rows := source.fetchmany(chunk_rows):
                    target.insert(tx, table, columns, [tuple(r) for r in rows])
                    copied[table] += len(rows)
        return copied

    def insert(
        self, tx: "_Tx", table: str, columns: tuple[str, ...], rows: Iterable[tuple], on_conflict: str = ""
    ) -> None:
        marks = ", ".join("?" for _ in columns)
        tx.executemany(f"INSERT INTO {self.table(table)} ({', '.join(columns)}) VALUES ({marks}) {on_conflict}", rows)


class _Tx:
    def __init__(self, cursor, placeholder: str):
        self._cursor = cursor
        self._placeholder = placeholder

    def _sql(self, sql: str) -> str:
        return sql.replace("?", self._placeholder) if self._placeholder != "?" else sql

    def execute(self, sql: str, params: tuple = ()):
        self._cursor.execute(self._sql(sql), params)
        return self

    def executemany(self, sql: str, rows: Iterable[tuple]):
        self._cursor.executemany(self._sql(sql), rows)

    def fetchone(self):
        return self._cursor.fetchone()

    def fetchall(self):
        return self._cursor.fetchall()

    def fetchmany(self, size: int):
        return self._cursor.fetchmany(size)
