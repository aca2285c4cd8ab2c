"""Small readers of a run directory for the end-to-end tests: independent of the checker, so they can check it."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections import Counter
from datetime import datetime
from pathlib import Path

import pandas as pd


def read_acks(run_dir: Path) -> pd.DataFrame:
    """The acknowledgement log, whichever form the run wrote: acks.csv, or the segments of acks/ and of each
    generator worker's acks/worker-NN/ (read with Arrow's own stream reader, not the harness's)."""
    folder = Path(run_dir) / "acks"
    if not folder.is_dir():
        return pd.read_csv(Path(run_dir) / "acks.csv")
    import pyarrow as pa

    tables = []
    for segment in sorted(folder.glob("*.arrows")) + sorted(folder.glob("worker-*/*.arrows")):
        with pa.ipc.open_stream(pa.OSFile(str(segment))) as reader:
            tables.append(reader.read_all())
    return pa.concat_tables(tables).to_pandas()


def acked(run_dir: Path) -> set[tuple[str, int]]:
    acks = read_acks(run_dir)
    ok = acks[acks.status == "acked"]
    return set(zip(ok.key, ok.seq.astype(int)))


def egress_counts(run_dir: Path, streamlet: str, table: str, columns: str = "key, seq") -> Counter:
    """How often each row (of the given columns) appears in an SQLite egress table."""
    with sqlite3.connect(Path(run_dir) / "egress" / f"{streamlet}.sqlite") as db:
        return Counter(tuple(row) for row in db.execute(f"SELECT {columns} FROM {table}"))


def independent_counts(run_dir: Path, streamlet: str = "egress") -> dict[str, int]:
    """lost, duplicated deliveries and in state, phantom of a record egress, from acks.csv and its SQLite tables
    alone: what report.json's counts must equal."""
    acks = read_acks(run_dir)
    sent = set(zip(acks.key, acks.seq.astype(int)))
    state, audit = egress_counts(run_dir, streamlet, "records"), egress_counts(run_dir, streamlet, "audit")
    return {
        "lost": len(acked(run_dir) - set(state)),
        "duplicated_in_state": sum(1 for r, n in state.items() if n > 1 and r in sent),
        "duplicated_deliveries": sum(1 for r, n in audit.items() if n > 1 and r in sent),
        "phantom": len((set(state) | set(audit)) - sent),
    }


def read_topic_dump(path) -> pd.DataFrame:
    """A topics/<topic>.jsonl dump as partition, offset, key, seq, event_time_ms."""
    rows = []
    with open(path) as fh:
        for line in fh:
            r = json.loads(line)
            v = r["value"]
            rows.append(
                (
                    r["partition"],
                    r["offset"],
                    v.get("key"),
                    v.get("seq"),
                    int(pd.Timestamp(v["event_time"]).value // 1_000_000),
                )
            )
    return pd.DataFrame(rows, columns=["partition", "offset", "key", "seq", "event_time_ms"])


def why(summary) -> str:
    """What a test asserting a complete run shows when it was not: the run's error, the streamlets that failed,
    every fault's events and the first lines of logs/faults.log (why one was skipped or failed), and the end of
    the harness's log of it (history.jsonl's last events)."""
    run_dir = Path(summary.run_dir)
    history = run_dir / "history.jsonl"
    lines = history.read_text().splitlines() if history.is_file() else ["(no history.jsonl)"]
    faults = [line for line in lines[:-15] if '"event": "fault_' in line]
    log = run_dir / "logs" / "faults.log"
    failures = log.read_text().splitlines()[:40] if log.is_file() else []
    return "\n".join(
        [f"status {summary.status}: {summary.error}", f"failed: {summary.failed_streamlets}", *faults, *failures]
        + lines[-15:]
    )


def held_batch_records(run_dir: Path, streamlet: str) -> set[tuple[str, int]]:
    """The source records of the batch an after-write kill of `streamlet` held (the history's held_query and
    held_batch): those at the offsets its checkpoint says it read, from its previous batch's end to its own, placed
    by acks.csv. The replay after the kill writes them again."""
    events = [json.loads(line) for line in (Path(run_dir) / "history.jsonl").read_text().splitlines()]
    held = next(e for e in events if e["event"] == "fault_begun" and e.get("at") == "after-write")
    offsets = Path(run_dir) / "checkpoints" / streamlet / held["held_query"] / "offsets"

    def ends(batch: int) -> dict[int, int]:
        if batch < 0:
            return {}
        topics = json.loads((offsets / str(batch)).read_text().splitlines()[-1])
        return {int(p): int(o) for parts in topics.values() for p, o in parts.items()}

    start, end = ends(held["held_batch"] - 1), ends(held["held_batch"])
    acks = read_acks(run_dir)
    acks = acks[acks.status == "acked"]
    read = [start.get(int(p), 0) <= int(o) < end.get(int(p), 0) for p, o in zip(acks.partition, acks.offset)]
    return set(zip(acks.key[read], acks.seq[read].astype(int)))


def batch_started_ms(event: dict) -> int:
    """When a progress event's batch was triggered (Spark's `timestamp`, ISO 8601 UTC)."""
    return int(datetime.fromisoformat(event["progress"]["timestamp"].replace("Z", "+00:00")).timestamp() * 1000)


FROZEN_CHAIN = Path(__file__).resolve().parent / "frozen_runs" / "chain"


def chain_copy(folder: Path, expectations: dict, without: str | None = None) -> Path:
    """A copy of the frozen chain's run directory in `folder` that states `expectations`, its history `without` the
    events of that name (None: all kept)."""
    run = folder / f"chain-{len(list(folder.glob('chain-*')))}"
    shutil.copytree(FROZEN_CHAIN, run)
    pipeline = json.loads((run / "pipeline.json").read_text())
    pipeline["expectations"] = expectations
    (run / "pipeline.json").write_text(json.dumps(pipeline))
    if without is not None:
        history = (run / "history.jsonl").read_text().splitlines()
        (run / "history.jsonl").write_text("\n".join(h for h in history if json.loads(h)["event"] != without) + "\n")
    return run


def run_example(folder: Path, scenario: str, run_dir: Path):
    """An example's scenario (`folder/scenario`) run to its end into `run_dir`, asserted complete, and its report."""
    import yaml

    from harness.checker.check import check_run
    from harness.runner.console import Console
    from harness.runner.run import run_scenario
    from harness.scenario.parse import parse_scenario

    raw = yaml.safe_load((folder / scenario).read_text())
    summary = run_scenario(parse_scenario(raw, folder), run_dir, console=Console(quiet=True))
    assert summary.status == "complete" and not summary.failed_streamlets, why(summary)
    return check_run(run_dir)
