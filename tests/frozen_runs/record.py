"""Record the frozen run directories the tests judge: `python -m tests.frozen_runs.record [NAME ...]`.

Each NAME.yaml here is run for real (a broker, Spark drivers, its faults) and what a reader of the run directory
reads is kept in NAME/: the evidence, not the broker's data, the checkpoints, Spark's scratch space or the pids.
Record again when RUN_DIR_VERSION (harness/evidence/layout.py) changes: tests/test_frozen_runs.py fails until then.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from harness.evidence.layout import RunLayout
from harness.report.write import ANOMALY_DIR
from tests.frozen_runs import HERE, run_fresh, scenarios


def left_out(layout: RunLayout) -> tuple[str, ...]:
    """What no reader of a finished run reads (the layout's non-evidence, the checkpoints, the pids, the drivers'
    control files), and what is written again from the evidence (the reports)."""
    runs = (layout.checkpoints("any").parent.name, layout.pids.name, layout.crash_offered("any").parent.name)
    return (*layout.not_evidence, *runs, "report.*", "junit.xml", ANOMALY_DIR)


def record(name: str) -> Path:
    """Run scenario `name` for real and keep its evidence in HERE/name (replacing what was there)."""
    with tempfile.TemporaryDirectory(prefix=f"frozen-{name}-") as scratch:
        run_dir = Path(scratch) / name
        summary = run_fresh(name, run_dir, quiet=False)
        if summary.status != "complete" or summary.failed_streamlets:
            raise SystemExit(f"{name}: the run did not complete ({summary.status}, {summary.failed_streamlets})")
        target = HERE / name
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(run_dir, target, ignore=shutil.ignore_patterns(*left_out(RunLayout(run_dir))))
    return target


def main(argv: list[str] | None = None) -> int:
    known = scenarios()
    parser = argparse.ArgumentParser(
        prog="python -m tests.frozen_runs.record",
        description="Record the frozen run directories (tests/frozen_runs/NAME.yaml run for real, kept in NAME/).",
        epilog="example: python -m tests.frozen_runs.record chain",
    )
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"which to record (default: all of {sorted(known)})")
    names = parser.parse_args(argv).names or sorted(known)
    unknown = [n for n in names if n not in known]
    if unknown:
        print(f"record: no tests/frozen_runs/{unknown[0]}.yaml (known: {', '.join(sorted(known))})", file=sys.stderr)
        return 2
    for name in names:
        target = record(name)
        size = sum(p.stat().st_size for p in target.rglob("*") if p.is_file())
        print(f"{name}: recorded in {target.relative_to(HERE.parent.parent)} ({size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
