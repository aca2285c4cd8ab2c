"""Export an egress's final state as evidence, once the run's drivers have stopped.

    python -m pipelines.export SETTINGS.json

An egress of your own (egress_evidence = EXPORTED) keeps its state in its own store; the checker reads
files only. So after the run the harness runs this in a process of its own, without Spark: it imports the
streamlet's class, calls its `export_state(ctx)`, and writes each record it yields (a mapping with at least
key and seq) as a JSON line to the path in the settings, whole or not at all. An egress that could not audit
its batches (Spark's own sinks) gives its deliveries from `export_deliveries(ctx)`: they go to the audit table,
as ctx.audit would have written them.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from contract.egress import AUDIT, AUDIT_COLUMNS, MAIN_QUERY
from pipelines.kinds import add_import_paths, load_kind
from pipelines.settings import DriverSettings, SettingsView
from pipelines.stores import Store


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m pipelines.export SETTINGS.json", file=sys.stderr)
        return 2
    settings = DriverSettings.load(Path(argv[0]))
    add_import_paths(settings.import_paths)
    streamlet = load_kind(settings.kind)()
    target = Path(settings.paths.egress_state)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".tmp")
    count = 0
    with open(partial, "w") as out:
        for row in streamlet.export_state(SettingsView(settings)):
            out.write(json.dumps(dict(row), default=str) + "\n")
            count += 1
    os.replace(partial, target)
    print(f"exported {count} records of {settings.name} to {target}", flush=True)
    deliveries = streamlet.export_deliveries(SettingsView(settings))
    if deliveries is not None:
        print(f"exported {_audit(settings, deliveries)} deliveries of {settings.name}", flush=True)
    return 0


def _audit(settings: DriverSettings, deliveries) -> int:
    """Replace the egress's audit rows with `deliveries`, in one transaction; returns how many."""
    store = Store(sqlite_path=Path(settings.paths.egress_db))
    store.create_tables(upsert_key=False, only=(AUDIT,))
    fields = AUDIT_COLUMNS[1:]  # all but the query
    rows = [(MAIN_QUERY, *(row.get(f) for f in fields)) for row in map(dict, deliveries)]
    with store.transaction() as tx:
        tx.execute(f"DELETE FROM {store.table(AUDIT)} WHERE query = ?", (MAIN_QUERY,))
        store.insert(tx, AUDIT, AUDIT_COLUMNS, rows)
    return len(rows)


if __name__ == "__main__":
    sys.exit(main())
