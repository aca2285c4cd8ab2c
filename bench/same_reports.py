"""Re-check run directories with two checkouts of the harness and compare their report.json, field by field.

    .venv/bin/python bench/same_reports.py OLD_CHECKOUT NEW_CHECKOUT RUN_DIR...

Each checkout checks every run directory in a process of its own (its code first on the path; the checker
reads files only, so the run directories are not changed). Prints the run directories whose reports differ and
the top-level fields that do, then a count; exit 1 when any differs. A refactor of the checker keeps every
report identical: record run directories before the change (e.g. the test suite's, kept by pytest under
/tmp/pytest-of-$USER), then compare the old and the new code on them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CHECK = """
import json, sys
from harness.checker.check import check_run
with open(sys.argv[1], "w") as out:
    for root in sys.argv[2:]:
        try:
            data = check_run(root).to_dict()
        except Exception as exc:
            data = {"error": f"{type(exc).__name__}: {exc}"}
        out.write(json.dumps({"dir": root, "report": data}, sort_keys=True, default=str) + "\\n")
"""


def reports(checkout: Path, run_dirs: list[str]) -> dict[str, dict]:
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as out:
        env = {k: v for k, v in os.environ.items() if k != "HARNESS_CHECK_STRICT"}
        env["PYTHONPATH"] = str(checkout)
        subprocess.run([sys.executable, "-c", CHECK, out.name, *run_dirs], cwd=checkout, env=env, check=True)
        return {line["dir"]: line["report"] for line in map(json.loads, Path(out.name).read_text().splitlines())}


def main() -> int:
    if len(sys.argv) < 4:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    old_checkout, new_checkout, run_dirs = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]
    old, new = reports(old_checkout, run_dirs), reports(new_checkout, run_dirs)
    differ = 0
    for root in run_dirs:
        fields = sorted(k for k in set(old[root]) | set(new[root]) if old[root].get(k) != new[root].get(k))
        if fields:
            differ += 1
            print(f"{root}: {', '.join(fields)}")
    print(f"{len(run_dirs) - differ} of {len(run_dirs)} reports identical")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
