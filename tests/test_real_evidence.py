"""The checker on real evidence: one real chain run (ingress -> enrich -> score -> upsert egress; enrich writes
through foreachBatch and is killed after a batch's write, score writes with Spark's own Kafka sink and is killed
while a batch is in flight), then copies of its run directory with known changes injected or evidence damaged.
make test judges the chain's frozen run directory (tests/frozen_runs/chain, recorded by tests/frozen_runs/record.py);
make test-long runs it afresh and judges that too. What the runner did in the run (the workload's length, the
restarts, the resource samples) is tested on a run of today in test_sinks.py.

Every expected number is counted here from the raw files (topic dumps, the egress's SQLite tables, acks.csv),
never taken from the checker.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections import Counter

import pytest

from harness.checker.anomaly_records import RECORDS, WITNESSES
from harness.checker.check import check_run
from harness.checker.counts import CAUSES, COUNTS, HOP_FINDINGS, VERDICT
from harness.checker.fault_results import FAULTS
from harness.process import Supervisor
from tests.conftest import run_harness
from tests.evidence_helpers import acked, egress_counts
from tests.frozen_runs import FROZEN_OR_FRESH, judged_run


def _dump(run_dir, topic) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "topics" / f"{topic}.jsonl").open()]


@pytest.fixture(scope="module", params=FROZEN_OR_FRESH)
def chain_run(request, tmp_path_factory):
    return judged_run(request, tmp_path_factory, "chain")


@pytest.fixture
def copy_of(chain_run, tmp_path):
    """A fresh copy of the chain run's directory to damage (the original stays as it was)."""

    def make(name: str):
        target = tmp_path / name
        shutil.copytree(chain_run, target, ignore=shutil.ignore_patterns("report.*", "junit.xml", "anomalies"))
        return target

    return make


def test_each_kill_mid_batch_makes_copies_at_its_own_hop_counted_from_the_topic_dumps(chain_run):
    events = list(map(json.loads, (chain_run / "history.jsonl").open()))
    begun = {e["target"]: e for e in events if e["event"] == "fault_begun"}
    assert set(begun) == {"enrich", "score"}
    # Independent of the checker. enrich stamps its batches: the held batch ran twice with the same id, writing
    # its records again.
    held = begun["enrich"]["held_batch"]
    rows = [r for r in _dump(chain_run, "enriched") if r["value"]["batches"].get("enrich") == held]
    assert rows and len(rows) % 2 == 0, f"enrich's batch {held} was not written exactly twice"
    made_by_enrich = len(rows) // 2

    # score writes with Spark's Kafka sink, which stamps nothing: its copies are those beyond what it read (same
    # record, same upstream stamps), and they are exactly the records of its batch in flight that were on the
    # topic before the kill (record timestamps from offsets/N's time to the kill's).
    def group(r):
        return r["value"]["key"], r["value"]["seq"], json.dumps(r["value"]["batches"], sort_keys=True)

    read, wrote = Counter(map(group, _dump(chain_run, "enriched"))), Counter(map(group, _dump(chain_run, "scored")))
    made_by_score = sum(max(0, n - max(read[g], 1)) for g, n in wrote.items())
    killed_ms = next(e["ts_ms"] for e in events if e["event"] == "process_killed" and e["pid"] == begun["score"]["pid"])
    in_flight = [
        r for r in _dump(chain_run, "scored") if begun["score"]["planned_ms"] <= r["timestamp_ms"] <= killed_ms
    ]
    assert made_by_score == len(in_flight) > 0
    scored = Counter((r["value"]["key"], r["value"]["seq"]) for r in _dump(chain_run, "scored"))
    extra_at_scored = sum(n - 1 for n in scored.values())
    stored = egress_counts(chain_run, "egress", "records")
    assert set(stored) == acked(chain_run) and max(stored.values()) == 1

    report = check_run(chain_run)
    hops = {h.name: h for h in report[HOP_FINDINGS]}
    faults = {f.target: f for f in report[FAULTS]}
    assert faults["enrich"].redelivered == made_by_enrich > 0
    assert faults["score"].redelivered == made_by_score
    assert faults["enrich"].redelivered_at == {"enriched": made_by_enrich}
    assert faults["score"].redelivered_at == {"scored": made_by_score}
    assert (hops["enriched"].copies.made_here, hops["scored"].copies.made_here) == (made_by_enrich, made_by_score)
    assert hops["scored"].copies.extra == extra_at_scored
    assert hops["scored"].copies.inherited == extra_at_scored - made_by_score
    assert hops["scored"].verdict == "at-least-once"  # Spark's Kafka sink, as its documentation says
    egress = hops["egress"].copies
    assert egress.extra_in_state == 0 and egress.absorbed == egress.extra >= extra_at_scored
    assert report[VERDICT] == "effectively-exactly-once" and report[COUNTS].lost == 0
    assert report[CAUSES]["duplicated"]["unexplained"] == 0 and report.passed
    print(
        f"chain: extra copies made by enrich's kill {made_by_enrich} (at enriched), by score's kill {made_by_score} "
        f"(at scored, Spark's Kafka sink); at scored {extra_at_scored} extra copies; egress absorbed {egress.absorbed}"
    )


def _sql(run_dir, *statements):
    with sqlite3.connect(run_dir / "egress" / "egress.sqlite") as db:
        for statement in statements:
            db.execute(*statement) if isinstance(statement, tuple) else db.execute(statement)


def _state_rows(run_dir, n):
    with sqlite3.connect(run_dir / "egress" / "egress.sqlite") as db:
        return db.execute("SELECT key, seq FROM records ORDER BY key, seq LIMIT ?", (n,)).fetchall()


def test_mutations_of_real_evidence_are_found_exactly(chain_run, copy_of):
    base = check_run(chain_run)
    c = base[COUNTS]

    deleted = copy_of("deleted")
    victims = _state_rows(deleted, 3)
    _sql(deleted, *[("DELETE FROM records WHERE key = ? AND seq = ?", v) for v in victims])
    report = check_run(deleted)
    assert report[COUNTS].lost == c.lost + 3 and report[CAUSES]["lost"]["unexplained"] == 3
    assert set(map(tuple, report[RECORDS]["lost"][["key", "seq"]].itertuples(index=False))) == set(victims)
    assert report[VERDICT] == "at-most-once"

    audit_copy = copy_of("audit-copy")
    with sqlite3.connect(audit_copy / "egress" / "egress.sqlite") as db:
        single = db.execute("SELECT key, seq FROM audit GROUP BY key, seq HAVING COUNT(*) = 1 LIMIT 1").fetchone()
        db.execute("INSERT INTO audit SELECT * FROM audit WHERE key = ? AND seq = ?", single)
    report = check_run(audit_copy)
    assert report[COUNTS].duplicated_deliveries == c.duplicated_deliveries + 1
    assert report[HOP_FINDINGS][-1].copies.extra == base[HOP_FINDINGS][-1].copies.extra + 1
    assert (report[COUNTS].lost, report[COUNTS].duplicated_in_state, report[VERDICT]) == (c.lost, 0, base[VERDICT])

    state_copy = copy_of("state-copy")
    victim = _state_rows(state_copy, 1)[0]
    _sql(
        state_copy,
        "CREATE TABLE plain AS SELECT * FROM records",
        "DROP TABLE records",
        "ALTER TABLE plain RENAME TO records",
        ("INSERT INTO records SELECT * FROM records WHERE key = ? AND seq = ?", victim),
    )
    report = check_run(state_copy)
    assert report[COUNTS].duplicated_in_state == 1 and report[VERDICT] == "at-least-once"
    assert report[HOP_FINDINGS][-1].copies.extra_in_state == 1

    phantoms = copy_of("phantoms")
    key, seq = _state_rows(phantoms, 1)[0]
    odd = [(key, 10_000_000), (key, -1), (key, seq + (1 << 40)), (key, seq + (1 << 41))]  # the last two aliased before
    for table in ("records", "audit"):
        _sql(phantoms, *[(f"INSERT INTO {table} (key, seq, batch_id) VALUES (?, ?, 0)", row) for row in odd])
    report = check_run(phantoms)
    assert report[COUNTS].phantom == 4 and report[VERDICT] == "none"
    assert (report[COUNTS].lost, report[COUNTS].duplicated_deliveries, report[COUNTS].duplicated_in_state) == (
        c.lost,
        c.duplicated_deliveries,
        c.duplicated_in_state,
    )
    assert {(w.key, w.seq) for w in report[WITNESSES] if w.anomaly == "phantom"} == set(odd)

    acks = copy_of("acks")
    lines = (acks / "acks.csv").read_text().splitlines(keepends=True)
    turned = lines[5].split(",")
    lines[5] = ",".join(turned[:4] + ["unknown", "", ""] + turned[7:])  # the outcome unknown, the resend column kept
    (acks / "acks.csv").write_text("".join(lines) + lines[7])  # and line 7 written twice
    report = check_run(acks)
    assert (report[COUNTS].acked, report[COUNTS].unknown) == (c.acked - 1, c.unknown + 1)
    assert (report[COUNTS].lost, report[COUNTS].phantom, report[VERDICT]) == (c.lost, 0, base[VERDICT])
    assert any("1 record(s) have more than one line" in g for g in report.gaps)


def test_damaged_real_evidence_is_never_a_pass_and_never_a_traceback(chain_run, copy_of, tmp_path):
    cases = {}
    no_progress = copy_of("no-progress")
    shutil.rmtree(no_progress / "progress")
    cases["no-progress"] = (no_progress, "max_recovery_s")

    corrupt = copy_of("corrupt-db")
    for path in (corrupt / "egress").iterdir():
        path.write_bytes(b"not a database" * 64)
    cases["corrupt-db"] = (corrupt, "max_lost")

    torn = copy_of("torn-acks")
    text = (torn / "acks.csv").read_bytes()
    # the last line cut after its key and seq
    (torn / "acks.csv").write_bytes(text[: text.rstrip(b"\n").rfind(b"\n") + 12])
    cases["torn-acks"] = (torn, None)

    live = copy_of("in-progress")
    (live / "run.json").unlink()
    with Supervisor(live / "pids") as supervisor:
        supervisor.start("generator", ["sleep", "900"], log_path=tmp_path / "sleep.log")
        cases["in-progress"] = (live, "end_to_end")
        results = {name: run_harness("report", str(root)) for name, (root, _) in cases.items()}
    for name, (root, unknown) in cases.items():
        result = results[name]
        assert "Traceback" not in result.stderr, (name, result.stderr)
        report = json.loads((root / "report.json").read_text())
        if unknown is None:  # torn: the cut record counts as unknown outcome; the rest is judged as before
            assert result.returncode == 0 and report["partial"], (name, result.stdout)
            assert any("last line cut mid-record" in g for g in report["gaps"])
            assert report["counts"]["phantom"] == 0 and report["counts"]["unknown"] == 1
            continue
        assert result.returncode == 3 and report["outcome"] == "unknown", (name, result.stdout)
        assert {e["name"]: e["status"] for e in report["expectations"]}[unknown] == "unknown", name
        assert not any(e["passed"] for e in report["expectations"] if e["status"] != "pass")
    live_report = json.loads((live / "report.json").read_text())
    assert live_report["unfinished"].startswith("run in progress: generator still running")
    assert live_report["gaps"][0].startswith("run in progress")


def test_the_real_run_compacted_to_columnar_evidence_gives_the_same_report(chain_run, copy_of):
    compacted = copy_of("compacted")
    result = run_harness("compact", str(compacted))
    assert result.returncode == 0, result.stderr
    # Every record-level file rewritten: the ack log, the three topic recordings, the egress's audit.
    assert not (compacted / "acks.csv").exists() and not list((compacted / "topics").glob("*.jsonl"))
    assert (compacted / "egress" / "egress.audit" / "main").is_dir() and not egress_counts(compacted, "egress", "audit")
    assert "egress/egress.sqlite (audit)" in result.stdout
    before, after = check_run(chain_run).to_dict(), check_run(compacted).to_dict()
    before.pop("run_dir"), after.pop("run_dir")
    assert json.dumps(after, default=str, sort_keys=True) == json.dumps(before, default=str, sort_keys=True)


def _compacted_report(copy_of):
    """The report of a compacted copy of the chain, through `harness check --json` with each engine given."""
    compacted = copy_of("engines")
    assert run_harness("compact", str(compacted)).returncode == 0

    def report(*engine) -> dict:
        # a deadline against a hang only: Spark's JVMs share two cores with the other tests' runs
        result = run_harness("check", str(compacted), "--json", *engine, timeout=900)
        assert result.returncode in (0, 3) and result.stdout.startswith("{"), result.stderr[-2000:]
        return json.loads(result.stdout)

    return compacted, report


def test_the_dense_engine_gives_the_real_runs_report(copy_of):
    """The reconciliation's plan (harness/checker/summary/) counted in the dense engine's arrays, the default for
    a columnar run: the report numpy gives."""
    _, report = _compacted_report(copy_of)
    expected = report("--engine", "numpy")
    assert expected["counts"]["duplicated_deliveries"] > 0  # the kills made copies: there is something to find
    assert report() == expected


@pytest.mark.e2e
@pytest.mark.long  # a Spark master and worker of the test's own
@pytest.mark.parametrize("chain_run", ["frozen"], indirect=True)  # the engine, not the run, is what is tested
def test_the_spark_engine_gives_the_real_runs_report_on_a_standalone_cluster(copy_of):
    """The same SQL text on Spark: a standalone master and worker the test starts; the executors read the run's
    segments themselves."""
    from harness.spark.standalone import StandaloneCluster

    compacted, report = _compacted_report(copy_of)
    expected = report()
    with Supervisor(compacted.parent / "spark-pids") as supervisor:
        cluster = StandaloneCluster(supervisor, compacted.parent / "spark", compacted.parent / "spark-logs", 1).start()
        assert report("--engine", "spark", "--master", cluster.master_url) == expected
        status = cluster.status()
    assert [a["name"] for a in status["completedapps"]] == ["harness-check"]  # it ran there, and finished
