"""What the evidence of a real run weighs in its two forms, and how fast each is judged.

    .venv/bin/python bench/evidence_size.py [--scenario scenarios/baseline.yaml] [--duration 60] [--rate 500]

Runs the scenario twice on the embedded cluster, the same seed, once with `evidence: {recordings: json}` (acks.csv,
topics/*.jsonl, the egress's audit table) and once with `columnar` (Arrow segments: acks/, topics/<topic>/,
egress/<streamlet>.audit/), then prints for each the bytes of the ack log, the topic recordings and the egress
folder, per record acknowledged, the check's time, and both verdicts (the same workload: they should agree).
Numbers, not assertions.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.checker.check import check_run  # noqa: E402
from harness.checker.counts import COUNTS, VERDICT  # noqa: E402
from harness.evidence.layout import RunLayout  # noqa: E402
from harness.runner.console import Console  # noqa: E402
from harness.runner.run import run_scenario  # noqa: E402
from harness.scenario.parse import parse_scenario  # noqa: E402


def size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", type=Path, default=ROOT / "scenarios" / "baseline.yaml")
    parser.add_argument("--duration", type=float, default=60.0, help="the workload's seconds [60]")
    parser.add_argument("--rate", type=float, default=500.0, help="records per second [500]")
    args = parser.parse_args()
    raw = yaml.safe_load(args.scenario.read_text())
    raw["workload"] = {**raw["workload"], "duration_s": args.duration, "rate": args.rate}
    with tempfile.TemporaryDirectory() as tmp:
        for form in ("json", "columnar"):
            run_dir = Path(tmp) / form
            scenario = parse_scenario({**raw, "evidence": {"recordings": form}}, args.scenario.parent)
            run_scenario(scenario, run_dir, console=Console(quiet=True))
            t = time.perf_counter()
            report = check_run(run_dir)
            checked = time.perf_counter() - t
            layout = RunLayout(run_dir)
            parts = {
                "ack log": size(layout.written_ack_log),
                "topics": size(layout.topics),
                "egress": size(run_dir / "egress"),
            }
            acked = report[COUNTS].acked or 1
            print(
                f"{form:>8}: {report[COUNTS].acked:,} records acknowledged, verdict {report[VERDICT]}, checked in "
                f"{checked:.2f} s; "
                + ", ".join(f"{name} {n / 1e6:.2f} MB ({n / acked:.0f} B/record)" for name, n in parts.items())
                + f"; together {sum(parts.values()) / acked:.0f} B/record",
                flush=True,
            )


if __name__ == "__main__":
    main()
