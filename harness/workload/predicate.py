"""A job's filter declared in the scenario (`applications.NAME.keeps`): an SQL predicate over the top-level fields of
the records the workload sends, evaluated by the harness on each record it sends, so the records the job drops by
design are expected missing downstream of it (not lost).

Evaluated by SQLite (in memory, one prepared statement), which shares Spark's three-valued logic: a comparison with
NULL is NULL, `NULL AND false` is false, `NULL OR true` is true, and a filter keeps a record only when the
predicate is TRUE (NULL drops it, as Spark's `filter` does). LIKE is made case-sensitive, as Spark's is. Keep to
what both engines mean the same way: comparisons of a field with a literal of its type, AND/OR/NOT, IS [NOT] NULL,
IN, BETWEEN, LIKE, and the common functions (lower, upper, length, abs, coalesce); integer division and comparing
text with numbers differ between them.
"""

from __future__ import annotations

import json
import sqlite3


class PredicateError(ValueError):
    pass


class Predicate:
    """`sql` over `fields` (the names a record may have); keeps(record) is True when the predicate is TRUE."""

    def __init__(self, sql: str, fields: list[str]):
        if not isinstance(sql, str) or not sql.strip() or ";" in sql:
            raise PredicateError(f'expected an SQL predicate like "amount >= 10", got {sql!r}')
        self.sql, self.fields = sql, list(fields)
        self._db = sqlite3.connect(":memory:")
        self._db.execute("PRAGMA case_sensitive_like = ON")
        columns = ", ".join(f"? AS {_quoted(name)}" for name in self.fields) or "NULL AS _none"
        self._query = f"SELECT ({sql}) FROM (SELECT {columns})"
        try:
            self._db.execute(self._query, [None] * len(self.fields)).fetchone()
        except sqlite3.Error as exc:
            raise PredicateError(f"{sql!r} is not a predicate over {', '.join(self.fields)}: {exc}") from None

    def keeps(self, record: dict) -> bool:
        row = self._db.execute(self._query, [_value(record.get(name)) for name in self.fields]).fetchone()
        return row[0] is not None and bool(row[0])


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _value(value):
    """A JSON value as SQLite binds it: objects and lists as their JSON text, booleans as 1 and 0."""
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return value
