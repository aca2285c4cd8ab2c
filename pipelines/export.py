"""Export an egress's final state as evidence, once the run's drivers have stopped.

    python -m pipelines.export SETTINGS.json

An egress of your own (egress_evidence = EXPORTED) keeps its state in its own store; the checker reads
files only. So after the run the harness runs this in a process of its own, without Spark: it imports the
streamlet's class, calls its `export_state(ctx)`, and writes each record it yields (a mapping with at least
key and seq) as a JSON line to the path in the settings, whole or not at all (for a run recording its evidence in
columnar form: its key, seq and batch_id as segments). An egress that could not audit its batches (Spark's own
sinks) gives its deliveries from `export_deliveries(ctx)`: they go where ctx.audit would have written them.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from contract.egress import AUDIT, AUDIT_COLUMNS, MAIN_QUERY, STATE, STATE_COLUMNS
from pipelines.audit import ExportedEvidence
from pipelines.kinds import add_import_paths, load_kind
from pipelines.settings import DriverSettings, SettingsView


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m pipelines.export SETTINGS.json", file=sys.stderr)
        return 2
    settings = DriverSettings.load(Path(argv[0]))
    add_import_paths(settings.import_paths)
    streamlet = load_kind(settings.kind)()
    paths = settings.paths
    evidence = ExportedEvidence.of(paths)
    state = (dict(row) for row in streamlet.export_state(SettingsView(settings)))
    if paths.egress_records:
        rows = [tuple(row.get(c) for c in STATE_COLUMNS) for row in state]
        evidence.write({STATE: rows})
        count, target = len(rows), paths.egress_records
    else:
        count, target = _json_lines(Path(paths.egress_state), state)
    print(f"exported {count} records of {settings.name} to {target}", flush=True)
    deliveries = streamlet.export_deliveries(SettingsView(settings))
    if deliveries is not None:
        audit = [(MAIN_QUERY, *(row.get(f) for f in AUDIT_COLUMNS[1:])) for row in map(dict, deliveries)]
        evidence.write({AUDIT: audit})
        print(f"exported {len(audit)} deliveries of {settings.name}", flush=True)
    return 0


def _json_lines(target: Path, rows) -> tuple[int, Path]:
    """The state as JSON lines (every field the egress gave), whole or not at all; how many, and where."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".tmp")
    count = 0
    with open(partial, "w") as out:
        for row in rows:
            out.write(json.dumps(row, default=str) + "\n")
            count += 1
    os.replace(partial, target)
    return count, target


if __name__ == "__main__":
    sys.exit(main())
