"""The partner topics' log (partners.csv, harness/workload/partners.py): one line per record of a topic that partner
topics answer, per partner topic: the record (its key and seq), the partner topic, what became of its answer
(OUTCOMES), and the answer's key and seq where one was sent."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv

PARTNER_COLUMNS = ("key", "seq", "partner_topic", "outcome", "partner_key", "partner_seq")
ANSWERED, LATE, MISSING, UNSENT = "answered", "late", "missing", "unsent"
OUTCOMES = {
    ANSWERED: "sent as planned (after_s after the record it answers)",
    LATE: "sent late_by_s later than planned",
    MISSING: "none, by design (the declared missing share)",
    UNSENT: "none, because the workload stopped before it was due",
}


def read_partners(path: Path) -> pa.Table | None:
    """partners.csv as text columns; None when the run has none. ArrowInvalid or OSError where it cannot be read."""
    if not path.is_file():
        return None
    options = pacsv.ConvertOptions(column_types={c: pa.string() for c in PARTNER_COLUMNS}, strings_can_be_null=True)
    table = pacsv.read_csv(path, convert_options=options)
    missing = [c for c in PARTNER_COLUMNS if c not in table.column_names]
    if missing:
        raise pa.ArrowInvalid(f"no column {missing[0]}")
    return table
