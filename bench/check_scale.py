"""How the checker scales: evidence of 1M, 10M, 50M delivered records; check time vs. load time, peak memory.

    .venv/bin/python bench/check_scale.py                    # 1M and 10M
    .venv/bin/python bench/check_scale.py --sizes 1e6,1e7,5e7 --dir /var/tmp/bench

Each size: a synthetic run directory (acks.csv, two topic dumps, the egress's
SQLite audit and state; 0.1% of the records replayed at the egress, 0.01%
lost), then two fresh processes: one only loads the evidence (the time the
files take to read), one runs the whole check. Prints seconds, the ratio
(goal: check within 3x of load) and each process's peak memory.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MEASURE = """
import resource, sys, time
from harness.checker.check import check_run
from harness.checker.load import load_evidence
t = time.perf_counter()
if sys.argv[1] == "load":
    load_evidence(sys.argv[2])
else:
    report = check_run(sys.argv[2])
    assert report.counts.lost > 0 and report.counts.duplicated_deliveries > 0, report.counts
print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def generate(root: Path, records: int, recordings: str = "json") -> None:
    from tests.synthetic_run import Flow, make_sent, write_run

    keys = 64
    sent = make_sent(keys, records // keys)
    n = len(sent)
    rng = np.random.default_rng(1)
    every = np.arange(n)
    lost = rng.choice(n, max(1, n // 10_000), replace=False)
    kept = np.setdiff1d(every, lost)
    replayed = np.sort(rng.choice(kept, max(1, n // 1000), replace=False))
    audit = np.concatenate([kept, replayed])
    write_run(root, sent, Flow({"ingested": every, "processed": kept}, audit, kept), recordings=recordings)


def measure(what: str, root: Path) -> tuple[float, float]:
    out = subprocess.run(
        [sys.executable, "-c", MEASURE, what, str(root)], capture_output=True, text=True, cwd=ROOT, check=True
    )
    seconds, rss_kb = out.stdout.split()
    return float(seconds), int(rss_kb) / 1024 / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1e6,1e7", help="delivered records per run, comma-separated [1e6,1e7]")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/harness-bench"), help="where the evidence is generated")
    parser.add_argument("--keep", action="store_true", help="keep the generated evidence")
    parser.add_argument(
        "--recordings", choices=("json", "columnar"), default="columnar", help="the topic recordings' form [columnar]"
    )
    args = parser.parse_args()
    print(
        f"{'records':>12} {'generate s':>10} {'evidence GB':>11} {'load s':>8} {'check s':>8} {'ratio':>6} "
        f"{'load GiB':>9} {'check GiB':>9}",
        flush=True,
    )
    for size in (int(float(s)) for s in args.sizes.split(",")):
        root = args.dir / f"run-{size}"
        shutil.rmtree(root, ignore_errors=True)
        t = time.perf_counter()
        generate(root, size, args.recordings)
        generated = time.perf_counter() - t
        disk = sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) / 1e9
        load_s, load_gib = measure("load", root)
        check_s, check_gib = measure("check", root)
        print(
            f"{size:>12,} {generated:>10.1f} {disk:>11.2f} {load_s:>8.1f} {check_s:>8.1f} {check_s / load_s:>6.2f} "
            f"{load_gib:>9.2f} {check_gib:>9.2f}",
            flush=True,
        )
        if not args.keep:
            shutil.rmtree(root)


if __name__ == "__main__":
    main()
