"""Storms in a row: one run of a storm scenario per seed, each judged, its counts checked against a count made
from the raw evidence (acks.csv and the egress's tables), and a table of them all.

    .venv/bin/python bench/storm.py                          # seeds 1 to 20 of scenarios/storm.yaml
    .venv/bin/python bench/storm.py --seeds 3,7 --out /var/tmp/storms
    .venv/bin/python bench/storm.py --scenario my-storm.yaml --seeds 1-5

Prints one line per seed as it finishes (seed, the faults drawn, how the run ended, verdict, lost by the report
and by the independent count, extra copies, duplicates kept, minutes), then the totals. Exit 1 when a run
ended without a report, said `harness: error`, left a process running, or counted differently.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.evidence_helpers import independent_counts  # noqa: E402

HARNESS = [sys.executable, "-m", "harness.cli"]
COUNTED = ("lost", "duplicated_in_state", "duplicated_deliveries", "phantom")


def seeds(text: str) -> list[int]:
    """`1-20` or `3,7,9`."""
    if "-" in text:
        first, last = text.split("-", 1)
        return list(range(int(first), int(last) + 1))
    return [int(s) for s in text.split(",")]


def one(scenario: Path, seed: int, out: Path) -> tuple[str, bool]:
    run_dir = out / f"seed-{seed}"
    t0 = time.monotonic()
    result = subprocess.run(
        [*HARNESS, "run", str(scenario), "--seed", str(seed), "--out", str(run_dir)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    minutes = (time.monotonic() - t0) / 60
    (run_dir.parent / f"seed-{seed}.log").write_text(result.stdout + result.stderr)
    if result.returncode == 130:  # the run was interrupted (Ctrl-C, SIGTERM): so is the bench
        raise KeyboardInterrupt
    report_path = run_dir / "report.json"
    if not report_path.is_file():
        return f"{seed:>4}  no report (exit {result.returncode}): {result.stderr.strip().splitlines()[-1:]}", False
    report = json.loads(report_path.read_text())
    counts = report["counts"]
    independent = independent_counts(run_dir)
    equal = all(counts[k] == independent[k] for k in COUNTED)
    left = subprocess.run([*HARNESS, "clean", str(run_dir)], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    schedule = json.loads((run_dir / "scenario.json").read_text())["resolved"]["schedule"]
    drawn = Counter(f["kind"] for f in schedule)
    faults = ", ".join(f"{k}" + (f" x{n}" if n > 1 else "") for k, n in sorted(drawn.items()))
    copies = sum(h["copies"]["extra"] for h in report["hops"] if h.get("copies"))
    ok = equal and "harness: error" not in result.stderr and left == "nothing was running"
    line = (
        f"{seed:>4}  {faults:<70.70}  exit {result.returncode}  {report['outcome']:<7}  "
        f"{report['verdict']['end_to_end']:<24}  "
        f"lost {counts['lost']:>5} / {independent['lost']:>5}  copies {copies:>6}  "
        f"in state {counts['duplicated_in_state']:>3}  {minutes:4.1f} min" + ("" if ok else "  MISMATCH OR LEFTOVER")
    )
    return line, ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", type=Path, default=ROOT / "scenarios" / "storm.yaml")
    parser.add_argument("--seeds", default="1-20", help="1-20, or 3,7,9")
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / f"storm-bench-{time.strftime('%Y%m%d-%H%M%S')}")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    print(
        f"{'seed':>4}  {'faults drawn':<70}  exit  outcome  verdict                   lost report / counted  extra "
        "copies"
    )
    oks = []
    t0 = time.monotonic()
    try:
        for seed in seeds(args.seeds):
            line, ok = one(args.scenario, seed, args.out)
            print(line, flush=True)
            oks.append(ok)
    except KeyboardInterrupt:
        print(f"interrupted during seed {seed}: its run was stopped and is not counted")
    print(
        f"{sum(oks)} of {len(oks)} storms ended with a report whose counts equal the independent count, nothing left "
        f"running; {(time.monotonic() - t0) / 60:.0f} min in all; runs in {args.out}"
    )
    return 0 if all(oks) else 1


if __name__ == "__main__":
    sys.exit(main())
