"""What an egress's audit costs a record in columnar form: given Arrow columns as they come from Spark, against the
same columns given as Python lists (as before: each value converted to Python and back).

    .venv/bin/python bench/audit_cost.py [--records 200000] [--rounds 7]

A batch of --records deliveries of the built-in egress's shape (key, seq, event time, a two-streamlet batch stamp,
topic, partition, offset) written to audit segments (pipelines/audit.py, zstd as in a run), best of --rounds, CPU
microseconds per record. `lists` counts the conversion to lists (Arrow's to_pylist) apart, since an egress that
writes its store from lists pays it anyway. Numbers, not assertions.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pipelines.audit import Deliveries  # noqa: E402


def batch(records: int) -> pa.Table:
    return pa.table(
        {
            "key": pa.array([f"key-{i % 8}" for i in range(records)]),
            "seq": pa.array(range(records), pa.int64()),
            "event_time_ms": pa.array(range(1_800_000_000_000, 1_800_000_000_000 + records), pa.int64()),
            "batches": pa.array([json.dumps({"ingress": i // 1000, "processor": i // 900}) for i in range(records)]),
            "topic": pa.array(["harness.run.processed"] * records),
            "partition": pa.array([i % 2 for i in range(records)], pa.int32()),
            "offset": pa.array(range(records), pa.int64()),
        }
    )


def best_us(records: int, rounds: int, work) -> float:
    best = float("inf")
    for round_number in range(rounds):
        t0 = time.process_time()
        work(round_number)
        best = min(best, time.process_time() - t0)
    return best / records * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    table = batch(args.records)
    lists = [column.to_pylist() for column in table.columns]
    with tempfile.TemporaryDirectory() as folder:
        deliveries = Deliveries(str(Path(folder) / "audit"), lambda: None)
        converting = best_us(args.records, args.rounds, lambda _: [c.to_pylist() for c in table.columns])
        from_lists = best_us(args.records, args.rounds, lambda r: deliveries.record("lists", r, *lists))
        from_arrow = best_us(args.records, args.rounds, lambda r: deliveries.record("arrow", r, *table.columns))
    print(f"audit of {args.records:,} deliveries in columnar form, best of {args.rounds}, CPU us per record:")
    print(f"  from Python lists   {from_lists:5.2f}  (and {converting:.2f} to make the lists)")
    print(f"  from Arrow columns  {from_arrow:5.2f}")
    print(f"  lists / Arrow: {from_lists / from_arrow:.1f}x; saved {from_lists - from_arrow:.2f} us a record")


if __name__ == "__main__":
    main()
