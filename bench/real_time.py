"""What a driver kill costs in Real-time Mode, beside micro-batch mode: examples/realtime-kafka's job run by the
harness once per mode (micro-batch, and Real-time Mode at each checkpoint interval), each run twice: SIGKILLed
five times (at whatever moment it is, the gaps between kills uneven, so each lands at another point of its
interval), and without faults (the latency it has when nothing breaks). From each run's report.json: the copies
each kill's restart emitted again, how much input they span (seconds between the first and the last of their
records' sends), how long before the kill the query last checkpointed, the first output after it, and the
end-to-end latency (event time at the source to arrival at the output) p50 and p99.

    python bench/real_time.py [--out DIR] [--duration S] [--steady S] [--rate N] [INTERVAL ...]   (default: 5 15 30)
    python bench/real_time.py --out DIR --table [INTERVAL ...]     the table again from the runs in DIR

Prints one line per run as it ends, then a Markdown table (docs/real-time-mode.md has one); runs stay in DIR.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "realtime-kafka" / "scenario.yaml"
INTERVAL = "--checkpoint-interval"
# When the kills come, in seconds of a 240-second workload (scaled to another): gaps of 43, 52, 37 and 56 s, so that
# each lands at another point of its interval (a restarted query checkpoints a startup and an interval after it).
KILLS = (31, 74, 126, 163, 219)


def variant(interval: str | None, kills: bool, duration: int, rate: int) -> dict:
    """The example's scenario in micro-batch mode (`interval` None) or Real-time Mode at `interval`."""
    raw = yaml.safe_load(EXAMPLE.read_text())
    app = raw["applications"]["screen"]
    command = app["command"]
    at = command.index(INTERVAL)
    if interval is None:
        command[at : at + 2] = ["--trigger", "micro-batch"]
        app["trigger"] = "micro-batch"
    else:
        command[at + 1] = interval
    app["cwd"] = str(EXAMPLE.parent)
    raw["name"] = f"real-time-bench-{(interval or 'micro-batch').replace(' ', '-')}-{'kills' if kills else 'steady'}"
    raw["workload"] |= {"duration_s": duration, "rate": rate}
    kill = {"kind": "kill-driver", "target": "screen", "restart_after_s": 2}
    raw["faults"] = [kill | {"start_s": round(at * duration / 240)} for at in KILLS] if kills else []
    raw["expectations"] = {"max_lost": 0}
    return raw


def run(raw: dict, folder: Path, again: bool) -> dict:
    """Run one variant with the harness's command line (unless `again`: read the run already in `folder`); its
    report.json."""
    path = folder / f"{raw['name']}.yaml"
    out = folder / raw["name"]
    report = out / "report.json"
    if not again:
        path.write_text(yaml.safe_dump(raw, sort_keys=False))
        done = subprocess.run(
            [sys.executable, "-m", "harness.cli", "run", str(path), "--out", str(out)], capture_output=True, text=True
        )
        if not report.is_file():
            sys.exit(f"{raw['name']}: no report (exit {done.returncode}): {done.stderr.strip()[-500:]}")
    elif not report.is_file():
        sys.exit(f"{report}: no such report (run the bench without --table first)")
    return json.loads(report.read_text())


def replays(report: dict) -> list[dict]:
    """Per kill: copies emitted again, the input they span (s), the last checkpoint and first output (s)."""
    section = report.get("sections", {}).get("replay") or {"rows": []}
    return [
        {
            "copies": row[4],
            "span_s": None if row[5] is None else round(row[5] - row[6], 1),
            "checkpoint_s": row[3],
            "output_s": row[7],
        }
        for row in section["rows"]
    ]


def known(value) -> str:
    return "unknown" if value is None else str(value)


def mean(values: list) -> str:
    known = [v for v in values if v is not None]
    return f"{statistics.mean(known):,.1f}" if known else "unknown"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("intervals", nargs="*", type=int, default=[5, 15, 30], help="checkpoint intervals (s)")
    parser.add_argument("--out", type=Path, help="where the runs go (default: a temporary folder, kept)")
    parser.add_argument("--duration", type=int, default=240, help="the workload of each run with kills (s)")
    parser.add_argument("--steady", type=int, default=60, help="the workload of each run without faults (s)")
    parser.add_argument("--rate", type=int, default=100, help="records per second")
    parser.add_argument("--table", action="store_true", help="run nothing: the table from the runs in --out")
    args = parser.parse_args()
    if args.table and not args.out:
        parser.error("--table reads the runs in --out DIR")
    folder = args.out or Path(tempfile.mkdtemp(prefix="real-time-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for interval in [None, *(f"{s} seconds" for s in args.intervals)]:
        found = {}
        for kills in (True, False):
            duration = args.duration if kills else args.steady
            report = run(variant(interval, kills, duration, args.rate), folder, args.table)
            found[kills] = report
            latency = report.get("latency") or {}
            print(
                f"{interval or 'micro-batch'} {'kills' if kills else 'steady'}: {report['verdict']['end_to_end']}, "
                f"lost {report['counts']['lost']}, duplicated {report['counts']['duplicated_deliveries']}, "
                f"p50 {latency.get('p50_s')} s, p99 {latency.get('p99_s')} s, replays {replays(report)}",
                flush=True,
            )
        kills, steady = replays(found[True]), found[False].get("latency") or {}
        under = found[True].get("latency") or {}
        rows.append(
            f"| {'micro-batch' if interval is None else 'real-time, ' + interval} | "
            f"{found[True]['verdict']['end_to_end']} | {' / '.join(format(k['copies'], ',') for k in kills)} | "
            f"{' / '.join(known(k['checkpoint_s']) for k in kills)} | "
            f"{' / '.join(known(k['span_s']) for k in kills)} | "
            f"{mean([k['output_s'] for k in kills])} | {steady.get('p50_s')} / {steady.get('p99_s')} | "
            f"{under.get('p50_s')} / {under.get('p99_s')} |"
        )
    print(
        "\n| mode | verdict under kills | copies emitted again, per kill | last checkpoint before each kill (s) | "
        "input the copies span (s) | first output after a kill (s, mean) | latency p50 / p99 (s), no fault | "
        f"latency p50 / p99 (s), {len(KILLS)} kills |"
    )
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    print(f"\nruns in {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
