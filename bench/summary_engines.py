"""Which engine builds the per-record summary of a run out of core: the present numpy path against DuckDB.

    .venv/bin/python bench/summary_engines.py                                    # 1M and 10M, realistic evidence
    .venv/bin/python bench/summary_engines.py --sizes 5e7 --dir /var/tmp/bench --memory 1.5GB

The check's first stage, as its scale design has it (docs/performance.md): every record's deliveries at every hop
and in the egress's state, joined to the acknowledgement log, and the end-to-end counts from it (acked, lost,
delivered twice, twice in the state, phantom), plus how many records have anything to say (any hop not exactly one
copy, or not acknowledged). Each engine runs in a fresh process over the same columnar evidence
(bench/check_scale.py's realistic profile: three hops, about 1% copies with copies of copies, a retention loss,
records of unknown outcome); the counts must agree. numpy: the checker's loader and reconciliation, all in memory.
duckdb: the segments streamed into DuckDB's own tables under a memory limit (spilling to disk past it), then one
SQL text. One line each:

    10,000,000 records, duckdb: 13.4 s (load 4.0 s), peak 1.93 GiB (loaded 1.41); notable 1.1%
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

NUMPY = """
import json, sys, time
from bench.peak import peak_kb
from harness.checker.hops import hop_data, reconcile_hops
from harness.checker.load import load_evidence
from harness.checker.reconcile import combine
t = time.perf_counter()
evidence = load_evidence(sys.argv[1])
loaded, loaded_kb = time.perf_counter() - t, peak_kb()
hops = hop_data(evidence)
results = reconcile_hops(evidence, hops)
c = combine([r for h, r in zip(hops, results) if h.kind == "egress"]).counts
counts = [c.acked, c.lost, c.duplicated_deliveries, c.duplicated_in_state, c.phantom]
seconds, peak = time.perf_counter() - t, peak_kb()
print(json.dumps({"seconds": seconds, "load": loaded, "load_kb": loaded_kb, "peak_kb": peak, "counts": counts,
                  "notable": None}))
"""

DUCKDB = """
import json, sys, time
from bench.peak import peak_kb
from pathlib import Path
import duckdb, pyarrow as pa
from contract.segments import read_segment, segments

def stream(folder, columns):
    first, _ = read_segment(segments(folder)[0], columns)
    def batches():
        for path in segments(folder):
            table, _ = read_segment(path, columns)
            yield from table.to_batches()
    return pa.RecordBatchReader.from_batches(first.schema, batches())

def state(db):
    import adbc_driver_sqlite.dbapi as adbc
    conn = adbc.connect(f"file:{db}?mode=ro")
    cursor = conn.cursor()
    cursor.execute("SELECT key, seq FROM records")
    held.append((conn, cursor))  # open until DuckDB has read the stream
    return cursor.fetch_record_batch()

held = []

root, memory, spill = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
t = time.perf_counter()
con = duckdb.connect(config={"memory_limit": memory, "temp_directory": spill, "threads": 2})
sources = {
    "acks": stream(root / "acks", ["key", "seq", "status"]),
    "ingested": stream(root / "topics" / "ingested", ["key", "seq"]),
    "processed": stream(root / "topics" / "processed", ["key", "seq"]),
    "audit": stream(root / "egress" / "egress.audit" / "main", ["key", "seq"]),
    "state": state(root / "egress" / "egress.sqlite"),
}
for name, reader in sources.items():
    con.register("source", reader)
    con.execute(f"CREATE TABLE {name} AS SELECT * FROM source")
    con.unregister("source")
loaded, loaded_kb = time.perf_counter() - t, peak_kb()
con.execute(Path(sys.argv[4]).read_text())
counts = con.execute(
    "SELECT count(*) FILTER (acked), count(*) FILTER (acked AND kept = 0),"
    " count(*) FILTER (sent AND delivered > 1), count(*) FILTER (sent AND kept > 1),"
    " count(*) FILTER (NOT sent AND (delivered > 0 OR kept > 0)), count(*) FILTER (" + sys.argv[5] + ") FROM summary"
).fetchone()
seconds, peak = time.perf_counter() - t, peak_kb()
print(json.dumps({"seconds": seconds, "load": loaded, "load_kb": loaded_kb, "peak_kb": peak, "counts": list(counts[:5]),
                  "notable": counts[5], "records": con.execute("SELECT count(*) FROM summary").fetchone()[0]}))
"""

# One row per record any file names: its sends, and its copies at every hop and in the state. One aggregation over
# every file's rows tagged with their source (no join: it spills within the memory limit where five hash joins on
# (key, seq) ran out of it at 50M records); plain CASE sums, so the text is Spark SQL as well.
SUMMARY_SQL = """
CREATE TABLE summary AS
SELECT key, seq,
       SUM(CASE WHEN source = 0 THEN 1 ELSE 0 END) > 0 AS sent,
       MAX(CASE WHEN source = 0 AND acked THEN 1 ELSE 0 END) = 1 AS acked,
       SUM(CASE WHEN source = 1 THEN 1 ELSE 0 END) AS ingested,
       SUM(CASE WHEN source = 2 THEN 1 ELSE 0 END) AS processed,
       SUM(CASE WHEN source = 3 THEN 1 ELSE 0 END) AS delivered,
       SUM(CASE WHEN source = 4 THEN 1 ELSE 0 END) AS kept
FROM (
    SELECT key, seq, 0 AS source, status = 'acked' AS acked FROM acks
    UNION ALL SELECT key, seq, 1 AS source, false AS acked FROM ingested
    UNION ALL SELECT key, seq, 2 AS source, false AS acked FROM processed
    UNION ALL SELECT key, seq, 3 AS source, false AS acked FROM audit
    UNION ALL SELECT key, seq, 4 AS source, false AS acked FROM state
) AS rows
GROUP BY key, seq
"""
NOTABLE = "NOT (acked AND ingested = 1 AND processed = 1 AND delivered = 1 AND kept = 1)"


def measure(engine: str, root: Path, memory: str) -> dict:
    sql = root.parent / "summary.sql"
    sql.write_text(SUMMARY_SQL)
    spill = root.parent / "duckdb-spill"
    command = (
        [sys.executable, "-c", NUMPY, str(root)]
        if engine == "numpy"
        else [sys.executable, "-c", DUCKDB, str(root), memory, str(spill), str(sql), NOTABLE]
    )
    try:
        done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    finally:
        shutil.rmtree(spill, ignore_errors=True)
    if done.returncode:  # the error's own line (DuckDB's last line is a link to its tuning guide)
        lines = done.stderr.strip().splitlines() or [f"exit {done.returncode}"]
        sys.exit(f"{engine}: failed: {next((line for line in lines if 'Error' in line), lines[-1])}")
    return json.loads(done.stdout.splitlines()[-1])


def main() -> None:
    from bench.check_scale import generate_realistic

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1e6,1e7", help="delivered records per run, comma-separated [1e6,1e7]")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/harness-bench"), help="where the evidence is generated")
    parser.add_argument("--memory", default="1.5GB", help="DuckDB's memory limit [1.5GB]")
    parser.add_argument("--keep", action="store_true", help="keep the generated evidence")
    args = parser.parse_args()
    for size in (int(float(s)) for s in args.sizes.split(",")):
        root = args.dir / f"summary-{size}"
        shutil.rmtree(root, ignore_errors=True)
        generate_realistic(root, size, "columnar")
        found = {}
        for engine in ("numpy", "duckdb"):
            found[engine] = result = measure(engine, root, args.memory)
            notable = f"; notable {result['notable'] / result['records']:.1%}" if result["notable"] is not None else ""
            print(
                f"{size:,} records, {engine}: {result['seconds']:.1f} s (load {result['load']:.1f} s), "
                f"peak {result['peak_kb'] / 1024**2:.2f} GiB (loaded {result['load_kb'] / 1024**2:.2f}){notable}",
                flush=True,
            )
        assert found["numpy"]["counts"] == found["duckdb"]["counts"], {e: r["counts"] for e, r in found.items()}
        if not args.keep:
            shutil.rmtree(root)


if __name__ == "__main__":
    main()
