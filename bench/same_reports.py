"""Re-check run directories with two checkouts of the harness and compare the reports they write: report.json
field by field, report.md, report.html and junit.xml whole.

    .venv/bin/python bench/same_reports.py OLD_CHECKOUT NEW_CHECKOUT RUN_DIR...
    .venv/bin/python bench/same_reports.py OLD NEW $(bench/same_reports.py --kept)   # the suite's kept runs

Each checkout checks every run directory in a process of its own (its code first on the path; the checker
reads files only, and the reports are rendered in memory, so the run directories are not changed). Prints the run
directories whose reports differ and what does (report.json's top-level fields, the other files by name), then a
count; exit 1 when any differs. report.json's schema_version may differ (a refactor may say what it changed), and
what an older harness drew differently at each drawing is not compared (its plots' date and clip paths' ids).
`--kept` lists the run directories pytest kept of the latest suite (under /tmp/pytest-of-$USER) and the frozen
ones of tests/frozen_runs. A refactor of the checker keeps every report identical: compare the old and the new
code on them.
"""

from __future__ import annotations

import getpass
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

CHECK = """
import json, sys
import xml.etree.ElementTree as ET
from harness.checker.check import check_run
from harness.report.html import render_html
from harness.report.junit import suite_element
from harness.report.markdown import render_markdown
with open(sys.argv[1], "w") as out:
    for root in sys.argv[2:]:
        try:
            report = check_run(root)
            data = {
                "report.json": report.to_dict(),
                "report.md": render_markdown(report),
                "report.html": render_html(report, True),
                "junit.xml": ET.tostring(suite_element(report), encoding="unicode"),
            }
        except Exception as exc:
            data = {"error": f"{type(exc).__name__}: {exc}"}
        out.write(json.dumps({"dir": root, "reports": data}, sort_keys=True, default=str) + "\\n")
"""
ROOT = Path(__file__).resolve().parent.parent
# What a report of an older harness drew differently each time (its plots' date, their clip paths' random ids).
UNSTABLE = re.compile(r"\n[ \t]*<dc:date>[^<]*</dc:date>|(?<=id=\")[mp][0-9a-f]{10}|(?<=#)[mp][0-9a-f]{10}")


def reports(checkout: Path, run_dirs: list[str]) -> dict[str, dict]:
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as out:
        env = {k: v for k, v in os.environ.items() if k != "HARNESS_CHECK_STRICT"}
        env["PYTHONPATH"] = str(checkout)
        subprocess.run([sys.executable, "-c", CHECK, out.name, *run_dirs], cwd=checkout, env=env, check=True)
        return {line["dir"]: line["reports"] for line in map(json.loads, Path(out.name).read_text().splitlines())}


def differences(old: dict, new: dict) -> list[str]:
    """What differs between two checkouts' reports of one run directory."""
    if "error" in old or "error" in new:
        return [] if old == new else [f"error: {old.get('error')} / {new.get('error')}"]
    old["report.html"], new["report.html"] = (UNSTABLE.sub("", r["report.html"]) for r in (old, new))
    found = [name for name in ("report.md", "report.html", "junit.xml") if old[name] != new[name]]
    before, after = old["report.json"], new["report.json"]
    fields = (set(before) | set(after)) - {"schema_version"}
    return [f"report.json {k}" for k in sorted(fields) if before.get(k) != after.get(k)] + found


def kept() -> list[str]:
    """The run directories of the latest suite pytest kept, and the frozen ones."""
    base = Path(tempfile.gettempdir()) / f"pytest-of-{getpass.getuser()}"
    latest = max(base.glob("pytest-[0-9]*"), key=lambda p: int(p.name.split("-")[1]), default=None)
    found = sorted(p.parent for p in latest.rglob("pipeline.json")) if latest else []
    return [str(p) for p in found + sorted(p.parent for p in (ROOT / "tests" / "frozen_runs").glob("*/pipeline.json"))]


def main() -> int:
    if sys.argv[1:] == ["--kept"]:
        print("\n".join(kept()))
        return 0
    if len(sys.argv) < 4:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    old_checkout, new_checkout, run_dirs = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]
    old, new = reports(old_checkout, run_dirs), reports(new_checkout, run_dirs)
    differ = 0
    for root in run_dirs:
        found = differences(old[root], new[root])
        if found:
            differ += 1
            print(f"{root}: {', '.join(found)}")
    print(f"{len(run_dirs) - differ} of {len(run_dirs)} run directories: all four reports identical")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
