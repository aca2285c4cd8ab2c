"""The schedule search for real: `harness explore` on a scenario within a budget, then its minimal.yaml replayed by
`harness run`, with the numbers the search is judged by.

    .venv/bin/python bench/explore.py                                # explore-append, 20 minutes
    .venv/bin/python bench/explore.py --budget 10m --out /var/tmp/explore
    .venv/bin/python bench/explore.py --idempotent --budget 8m        # the same space, an upsert egress: nothing

Prints: the runs (search, shrink, replay) and runs per hour, when the first failure came, the minimal schedule,
its reproduction rate, and the replay's verdict. With --idempotent the egress upserts (a replayed batch overwrites
itself) and the search should find nothing. Exit 1 when the outcome is not the expected one.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
HARNESS = [sys.executable, "-m", "harness.cli"]
SCENARIO = ROOT / "scenarios" / "explore-append.yaml"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", default="20m")
    parser.add_argument("--seed", default="1")
    parser.add_argument("--idempotent", action="store_true", help="the egress upserts: expect no counterexample")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="explore-"))
    scenario = SCENARIO
    if args.idempotent:
        raw = yaml.safe_load(SCENARIO.read_text())
        raw["name"] = "explore-upsert"
        raw["blueprint"]["streamlets"]["egress"]["settings"]["mode"] = "upsert"
        scenario = out.parent / f"{out.name}-upsert.yaml"
        scenario.write_text(yaml.safe_dump(raw, sort_keys=False))
    t0 = time.monotonic()
    search = subprocess.run(
        [*HARNESS, "explore", str(scenario), "--budget", args.budget, "--seed", args.seed, "--out", str(out)],
        cwd=ROOT,
    )
    minutes = (time.monotonic() - t0) / 60
    data = json.loads((out / "explore.json").read_text())
    runs = data["runs"]
    first_fail = next((r for r in runs if r["outcome"] == "fail"), None)
    print(
        f"explore: exit {search.returncode} in {minutes:.1f} min, {len(runs)} runs "
        f"({data['runs_per_hour']} runs/hour), {data['schedules_drawn']} schedule(s) drawn"
    )
    if args.idempotent:
        print("no counterexample, as expected" if search.returncode == 0 else "UNEXPECTED: a counterexample")
        return 0 if search.returncode == 0 else 1
    if first_fail is None or data["minimal"] is None:
        print("UNEXPECTED: no counterexample")
        return 1
    before = sum(r["seconds"] for r in runs[: first_fail["number"]]) / 60
    minimal = data["minimal"]
    print(f"first failure: run {first_fail['number']} after {before:.1f} min: {first_fail['signature']}")
    print(
        f"minimal ({'complete' if minimal['complete'] else 'budget ended'}): "
        f"{json.dumps(minimal['faults'])}, {minimal['workload_s']}s workload, "
        f"{len(minimal['trace'])} shrinking step(s), reproduced {minimal['reproduced']}"
    )
    replay = subprocess.run(
        [*HARNESS, "run", str(out / "minimal.yaml"), "--out", str(out / "replay")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    verdict = next((line for line in replay.stdout.splitlines() if line.startswith(("PASS", "FAIL"))), "no verdict")
    print(f"replay of minimal.yaml: exit {replay.returncode}: {verdict}")
    return 0 if search.returncode == 1 and replay.returncode == 1 and len(minimal["faults"]) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
