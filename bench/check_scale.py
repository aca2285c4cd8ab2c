"""How the checker scales: evidence of 1M, 10M, 50M delivered records; check time, load time, peak memory.

    .venv/bin/python bench/check_scale.py                               # 1M and 10M, every profile
    .venv/bin/python bench/check_scale.py --sizes 5e7 --dir /var/tmp/bench --profile realistic
    .venv/bin/python bench/check_scale.py --recordings json             # the JSON-lines form, for comparison
    .venv/bin/python bench/check_scale.py --engine numpy                # by one engine: numpy, dense, spark
    .venv/bin/python bench/check_scale.py --sizes 1e7 --steps           # and each step's time and the peak after it
    .venv/bin/python bench/check_scale.py --sizes 5e7 --keep --dir D    # kept: --reuse --dir D measures it again
    .venv/bin/python bench/check_scale.py --sizes 5e7 --profile windowed --no-load   # the check alone

Each size and profile: a run directory (acks.csv, the two intermediate topics'
recordings and the egress's evidence, in columnar form unless --recordings json),
then two fresh processes: one only loads the evidence, one runs the whole check
(and asserts it found the losses and copies) as `harness check` does, with the
default engine unless --engine names one; the peak is the check's (with an
engine it loads only the notable records' rows where it can). Profiles:
synthetic (every record through both topics; 0.01% lost, 0.1% replayed at the
egress, a SQLite store: its audit and state) and realistic (a Kafka egress: the
recording of the output topic a third streamlet writes; replayed batches at every
hop, about 1% copies with copies of copies, a retention shrink's loss the history
explains, records of unknown outcome) and windowed (a keyed count per 10-second
window over 10,000 keys, 1% of the records late beyond its watermark, the ingress's
replayed batches counted again; columnar only) and recreated (the realistic
profile with its source topic deleted and created again at four fifths of the
run: the old topic's last unread records and the new one's first lost) and missed (the
realistic profile with a retention shrink of an intermediate topic whose deleted
offsets its recording never saw). One line each:

    10,000,000 records: check 44.3 s, load 27.4 s, peak 4.12 GiB  (synthetic, columnar: ...)
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np

from harness.checker.summary.engines import ENGINES, chosen_name

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MEASURE = """
import dataclasses, sys, time
from bench.peak import peak_kb
from harness.checker.check import STEPS, check_run
from harness.checker.load import load_evidence
from harness.checker.summary.engines import DEFAULT, engine

def timed(step):
    def run(context, inner=step.run):
        started = time.perf_counter()
        found = inner(context)
        print("step", step.name, time.perf_counter() - started, peak_kb(), file=sys.stderr)
        return found
    return dataclasses.replace(step, run=run)

t = time.perf_counter()
if sys.argv[1] == "load":
    load_evidence(sys.argv[2])
else:
    chosen = engine(sys.argv[3]) if sys.argv[3] else DEFAULT
    report = check_run(sys.argv[2], engine=chosen, steps=[timed(s) for s in STEPS])
    counts = report[COUNTS]
    assert counts.lost > 0 and counts.duplicated_deliveries + counts.duplicated_in_state > 0, counts
    assert all("before they were recorded" in g for g in report.gaps), report.gaps  # the missed profile's alone
print(time.perf_counter() - t, peak_kb())
"""


def generate(root: Path, records: int, recordings: str = "json") -> None:
    """The synthetic profile: every record through both topics; 0.01% lost at the processor, 0.1% replayed at the
    egress."""
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


def _replayed(rows: np.ndarray, share: float, rng, batch: int = 50) -> np.ndarray:
    """`rows` with whole batches written again just after themselves (a driver killed after a batch's write), about
    `share` of the rows: what a replay leaves in a topic or an audit."""
    starts = np.flatnonzero(rng.random(len(rows) // batch + 1) < share) * batch
    again = np.concatenate([rows[s : s + batch] for s in starts] + [np.array([], np.int64)])
    at = np.concatenate([np.full(len(rows[s : s + batch]), s + batch) for s in starts] + [np.array([], np.int64)])
    return np.insert(rows, np.minimum(at, len(rows)), again)


def generate_realistic(
    root: Path, records: int, recordings: str = "json", recreated: bool = False, missed: bool = False
) -> None:
    """The realistic profile: three hops (two topics and the egress), each batch a replay makes written again right
    after itself, about 1% of the records copied in all, copies of copies among them (a replay at the processor of
    a batch holding the ingress's copies); a retention shrink deleting 0.05% of the records before the ingress read
    them (and the history saying so); 0.1% of the records sent with an unknown outcome; a Kafka egress (the output
    topic `delivered`, which a writer streamlet fills from `processed`, replaying batches too). `recreated`: the
    source topic deleted and created again at four fifths of the run (_recreate); `missed`: a second shrink, of
    `ingested` under the processor, whose deleted offsets the recording of `ingested` never saw (_missed)."""
    from tests.synthetic_run import T0, Flow, make_sent, write_run

    keys = 64
    sent = make_sent(keys, records // keys)
    n = len(sent)
    rng = np.random.default_rng(2)
    sent.acked[rng.choice(n, max(1, n // 1000), replace=False)] = False
    in_partition = np.flatnonzero(sent.partition == 0)
    first = len(in_partition) // 3
    deleted = in_partition[first : first + max(1, n // 2000)]
    window = (0, int(sent.offset[deleted[0]]), int(sent.offset[deleted[-1]]) + 1)
    history, progress = [], {}
    if recreated:
        history, progress["ingress"], unread = _recreate(sent)
        deleted = np.union1d(deleted, unread)
    read = np.setdiff1d(np.arange(n), deleted)
    ingested = _replayed(read, 0.004, rng)
    processed = _replayed(ingested, 0.004, rng)  # a replayed batch may hold the ingress's copies: copies of copies
    audit = _replayed(processed, 0.002, rng)
    history = [
        *history,
        {
            "ts_ms": T0 - 900,
            "event": "consumer_position",
            "streamlet": "ingress",
            "partitions": [["source", 0, window[1]]],
        },
        {
            "ts_ms": T0 - 800,
            "event": "log_start_observed",
            "streamlet": "ingress",
            "partitions": [["source", 0, window[2], window[2] + 99]],
        },
    ]
    flow = Flow({"ingested": ingested, "processed": processed}, audit, np.unique(processed))
    if missed:
        history += _missed(flow, sent)
    write_run(root, sent, flow, history=history, progress=progress, recordings=recordings, output_topic="delivered")


def _missed(flow, sent) -> list[dict]:
    """Retention shrunk under the processor: 0.05% of `ingested`'s partition 0, at two thirds of it, deleted before
    the processor read it and before the run's recording of the topic saw it (their copies taken from `processed` and
    every hop after it, and from the recording). The history's events."""
    from tests.synthetic_run import offsets

    copies = flow.topics["ingested"]
    partition = sent.key[copies] % 2  # the synthetic topics' partitioning
    mine = np.flatnonzero(partition == 0)
    start = len(mine) * 2 // 3
    gone = mine[start : start + max(1, len(copies) // 2000)]
    low, high = (int(offsets(partition)[i]) for i in (gone[0], gone[-1]))
    flow.unrecorded["ingested"] = np.isin(np.arange(len(copies)), gone)
    lost = np.unique(copies[gone])
    flow.topics["processed"] = flow.topics["processed"][~np.isin(flow.topics["processed"], lost)]
    flow.audit, flow.state = flow.audit[~np.isin(flow.audit, lost)], flow.state[~np.isin(flow.state, lost)]
    stopped, resumed = ["ingested", 0, low], ["ingested", 0, high + 1, high + 100]
    return [
        {"ts_ms": 1, "event": "consumer_position", "streamlet": "processor", "partitions": [stopped]},
        {"ts_ms": 2, "event": "log_start_observed", "streamlet": "processor", "partitions": [resumed]},
        {"ts_ms": 3, "event": "topics_recorded", "topics": ["ingested"], "missed": [["ingested", 0, low, high + 1]]},
    ]


def _recreate(sent) -> tuple[list[dict], list[dict], np.ndarray]:
    """The source topic deleted at four fifths of the records sent and created again (the records after it at
    offsets from 0 in each partition): the ingress had read all but the last 0.005% of each partition's old
    records, and its first batch after the re-creation went back to 0.005% of the new topic's offsets, so it never
    read those. The history's event, the ingress's batches, and the records lost so."""
    n = len(sent)
    cut, backlog = n * 4 // 5, max(1, n // 20_000)
    deleted_ms = int(sent.event_time_ms[cut])
    unread, read_to, skip_to = [], {}, {}
    for p in np.unique(sent.partition).tolist():
        old, new = (np.flatnonzero(sent.partition[:cut] == p), cut + np.flatnonzero(sent.partition[cut:] == p))
        sent.offset[new] = np.arange(len(new))
        read_to[p], skip_to[p] = int(sent.offset[old[-backlog]]), min(backlog, len(new))
        unread += [old[-backlog:], new[:backlog]]
    batch = {"event": "progress", "query": "main"}

    def ended(ts_ms: int, ends: dict[int, int]) -> dict:
        source = {"endOffset": {"source": {str(p): o for p, o in ends.items()}}}
        return {"ts_ms": ts_ms, **batch, "progress": {"batchId": 0, "numInputRows": 1, "sources": [source]}}

    history = [
        {
            "ts_ms": deleted_ms + 50,
            "event": "topic_recreated",
            "streamlet": "ingress",
            "topics": ["source"],
            "deleted_ms": deleted_ms,
            "created_ms": deleted_ms + 50,
            "read_to": [["source", p, o] for p, o in read_to.items()],
        }
    ]
    ends = {p: int(sent.offset[np.flatnonzero(sent.partition == p)[-1]]) + 1 for p in read_to}
    progress = [ended(deleted_ms - 100, read_to), ended(deleted_ms + 100, skip_to), ended(deleted_ms + 10**7, ends)]
    return history, progress, np.concatenate(unread)


def generate_windowed(root: Path, records: int, recordings: str = "columnar") -> None:
    """The windowed profile: a keyed count per 10-second window (tests/synthetic_windows.py) over 10,000 keys, the
    records sent at 1,000 a second (each key's about one a window), 1% of them late by 60 s (beyond the counter's
    10-second watermark: dropped), 0.1% of unknown outcome, the ingress's replayed batches as in the realistic
    profile (a copy counted again: its window over-counted)."""
    from tests.synthetic_run import T0, make_sent
    from tests.synthetic_windows import write_windowed_run

    if recordings != "columnar":
        sys.exit("check_scale: the windowed profile is written in columnar form only")
    keys = 10_000
    sent = make_sent(keys, records // keys)
    n = len(sent)
    rng = np.random.default_rng(3)
    sent.event_time_ms = T0 + np.arange(n, dtype=np.int64)  # 1,000 records a second
    late = rng.choice(n, max(1, n // 100), replace=False)
    sent.late[late] = True
    sent.event_time_ms[late] -= 60_000
    sent.acked[rng.choice(n, max(1, n // 1000), replace=False)] = False
    write_windowed_run(root, sent, _replayed(np.arange(n), 0.004, rng))


PROFILES = {
    "synthetic": generate,
    "realistic": generate_realistic,
    "windowed": generate_windowed,
    "recreated": partial(generate_realistic, recreated=True),
    "missed": partial(generate_realistic, missed=True),
}


def measure(what: str, root: Path, engine: str = "") -> tuple[float, float, list[tuple[str, float, float]]]:
    """Seconds, peak GiB, and (for a check) each step's seconds and the peak after it (`engine`: "" the default)."""
    command = [sys.executable, "-c", MEASURE, what, str(root), engine]
    out = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    if out.returncode != 0:  # the evidence stays, to look at
        last = [line for line in out.stderr.splitlines() if line.strip()][-1:] or ["(nothing on stderr)"]
        by = engine or "the default engine"
        sys.exit(f"check_scale: the {what} of {root} with {by} failed (exit {out.returncode}): {last[0][:500]}")
    seconds, rss_kb = out.stdout.splitlines()[-1].split()
    steps = [line.split()[1:] for line in out.stderr.splitlines() if line.startswith("step ")]
    return float(seconds), int(rss_kb) / 1024 / 1024, [(n, float(s), int(kb) / 1024 / 1024) for n, s, kb in steps]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1e6,1e7", help="delivered records per run, comma-separated [1e6,1e7]")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/harness-bench"), help="where the evidence is generated")
    parser.add_argument("--keep", action="store_true", help="keep the generated evidence")
    parser.add_argument(
        "--reuse", action="store_true", help="measure again (and keep) the evidence a --keep left in --dir"
    )
    parser.add_argument(
        "--recordings", choices=("json", "columnar"), default="columnar", help="the evidence's form [columnar]"
    )
    parser.add_argument("--profile", choices=(*PROFILES, "all"), default="all", help="which evidence (see above) [all]")
    parser.add_argument(
        "--engine", choices=ENGINES, help="what reconciles the hops (docs/checker.md) [harness check's default]"
    )
    parser.add_argument(
        "--steps", action="store_true", help="also each step of the check taking 0.1 s or more: seconds, peak after it"
    )
    parser.add_argument(
        "--no-load",
        action="store_true",
        help="do not measure the whole load (numpy's memory: about 0.4 GiB per million windowed records)",
    )
    args = parser.parse_args()
    if args.engine not in (None, "numpy") and args.recordings != "columnar":
        parser.error(f"--engine {args.engine} reads columnar evidence")
    profiles = list(PROFILES) if args.profile == "all" else [args.profile]
    for size in (int(float(s)) for s in args.sizes.split(",")):
        for profile in profiles:
            root = args.dir / f"{profile}-{size}"
            reused = args.reuse and (root / "run.json").is_file()
            if reused:
                made = "kept from before"
            else:
                shutil.rmtree(root, ignore_errors=True)
                t = time.perf_counter()
                PROFILES[profile](root, size, args.recordings)
                made = f"generated in {time.perf_counter() - t:.0f} s"
            disk = sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) / 1e9
            load = None if args.no_load else measure("load", root)
            check_s, check_gib, steps = measure("check", root, args.engine or "")
            by = args.engine or f"default: {chosen_name(root)}"
            loaded = "load not measured" if load is None else f"load {load[0]:.1f} s"
            whole = "the whole load not measured" if load is None else f"the whole load's peak {load[1]:.2f} GiB"
            print(
                f"{size:,} records: check {check_s:.1f} s, {loaded}, peak {check_gib:.2f} GiB"
                f"  ({profile}, {args.recordings}, {by}: evidence {disk:.2f} GB, {made}, {whole})",
                flush=True,
            )
            if args.steps:
                shown = [f"{name} {s:.1f} s ({gib:.2f})" for name, s, gib in steps if s >= 0.1]
                print(f"    steps (peak GiB after): {', '.join(shown)}", flush=True)
            if not (args.keep or reused):
                shutil.rmtree(root)


if __name__ == "__main__":
    main()
