"""The checker on real evidence: one real chain run (ingress -> enrich -> score -> upsert egress; enrich writes
through foreachBatch and is killed after a batch's write, score writes with Spark's own Kafka sink and is killed
while a batch is in flight), then copies of its run directory with known changes injected or evidence damaged.

Every expected number is counted here from the raw files (topic dumps, the egress's SQLite tables, acks.csv),
never taken from the checker.
"""

from __future__ import annotations

import csv
import json
import shutil
import signal
import sqlite3
from collections import Counter

import pytest

from harness.checker.check import check_run
from harness.evidence.progress import query_events
from harness.process import Supervisor
from harness.runner.console import Console
from harness.runner.run import run_scenario
from harness.scenario.parse import parse_scenario
from tests.conftest import run_harness
from tests.evidence_helpers import acked, egress_counts, why

pytestmark = pytest.mark.e2e

CHAIN = {
    "name": "chain",
    "blueprint": {
        "streamlets": {
            "ingress": {"kind": "ingress"},
            "enrich": {"kind": "processor"},
            "score": {"kind": "kafka-sink"},
            "egress": {"kind": "egress", "settings": {"mode": "upsert"}},
        },
        "connections": {"ingress.out": ["enrich.in"], "enrich.out": ["score.in"], "score.out": ["egress.in"]},
        "topics": {
            "ingress.out": {"name": "ingested"},
            "enrich.out": {"name": "enriched"},
            "score.out": {"name": "scored"},
        },
    },
    # The kills overlap; score's kill waits for input while enrich restarts: records keep coming until 10 s
    # after both kills ended, however late they come on a busy machine.
    "workload": {"rate": 30, "duration_s": 20, "after_faults_s": 10, "keys": 4},
    "faults": [
        {"kind": "kill-driver", "target": "enrich", "start_s": 5, "at": "after-write", "restart_after_s": 1},
        {"kind": "kill-driver", "target": "score", "start_s": 6, "at": "in-flight", "restart_after_s": 1},
    ],
    "expectations": {
        "end_to_end": "effectively-exactly-once",
        "max_lost": 0,
        "min_duplicated_deliveries": 1,
        "max_recovery_s": 300,
    },
}


def _dump(run_dir, topic) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "topics" / f"{topic}.jsonl").open()]


@pytest.fixture(scope="module")
def chain_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("chain") / "run"
    summary = run_scenario(parse_scenario(CHAIN), run_dir, console=Console(quiet=True))
    assert summary.status == "complete" and summary.faults_played == 2 and not summary.failed_streamlets, why(summary)
    return run_dir


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
    hops = {h.name: h for h in report.hops}
    faults = {f.target: f for f in report.faults}
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
    assert report.verdict == "effectively-exactly-once" and report.counts.lost == 0
    assert report.causes["duplicated"]["unexplained"] == 0 and report.passed
    print(
        f"chain: extra copies made by enrich's kill {made_by_enrich} (at enriched), by score's kill {made_by_score} "
        f"(at scored, Spark's Kafka sink); at scored {extra_at_scored} extra copies; egress absorbed {egress.absorbed}"
    )


def test_the_workload_lasts_until_its_time_after_the_last_fault_ended(chain_run):
    events = list(map(json.loads, (chain_run / "history.jsonl").open()))
    started = next(e["ts_ms"] for e in events if e["event"] == "process_started" and e["process"] == "generator")
    last_ended = max(e["ts_ms"] for e in events if e["event"] == "fault_ended")
    [stopped] = [e for e in events if e["event"] == "workload_stopped"]
    assert stopped["ts_ms"] - last_ended >= 10_000 and stopped["ts_ms"] - started >= 20_000
    # within seconds of it: the generator looks each second, and a busy machine runs its threads late
    assert stopped["ts_ms"] - max(last_ended + 10_000, started + 20_000) < 5_000, "stopped when its time came"
    exited = next(e for e in events if e["event"] == "process_exited" and e["process"] == "generator")
    assert exited["exit_code"] == 0 and exited["ts_ms"] >= stopped["ts_ms"]
    # It sent at its rate (30/s) from its first record until then (its own start, after the process's imports, is
    # when its clock begins: a busy machine delays it), within three seconds' records (a loaded machine ran it 58
    # records short of the rate over 169 s), and every record has its outcome.
    rows = list(csv.DictReader((chain_run / "acks.csv").open()))
    assert all(r["status"] == "acked" for r in rows)
    first_sent = min(int(r["event_time_ms"]) for r in rows if r["late"] == "0")
    assert 0 <= first_sent - started < 10_000
    assert abs(len(rows) - 30 * (stopped["ts_ms"] - first_sent) / 1000) <= 3 * 30, len(rows)


def test_a_killed_driver_is_gone_and_its_restart_runs_the_batch_in_flight_from_the_checkpoint(chain_run):
    events = list(map(json.loads, (chain_run / "history.jsonl").open()))
    for target in ("enrich", "score"):
        begun = next(e for e in events if e["event"] == "fault_begun" and e["target"] == target)
        killed = next(e for e in events if e["event"] == "process_killed" and e["pid"] == begun["pid"])
        assert killed["signal"] == "SIGKILL" and killed["exit_code"] == -signal.SIGKILL
        new_pid = next(e["new_pid"] for e in events if e["event"] == "fault_ended" and e["target"] == target)
        progress = [e for e in query_events(chain_run / "progress" / f"{target}.jsonl") if e["event"] == "progress"]
        first = next(e["progress"] for e in progress if e["pid"] == new_pid)
        # The restarted driver's first batch is the one the kill interrupted, read again from where the batch
        # before it ended: that batch the old driver committed (Spark reports a batch's progress after its commit).
        held = begun["held_batch"]
        assert first["batchId"] == held and first["numInputRows"] > 0, target
        before = next(
            e["progress"] for e in progress if e["pid"] == begun["pid"] and e["progress"]["batchId"] == held - 1
        )
        assert _offsets(first["sources"][0]["startOffset"]) == _offsets(before["sources"][0]["endOffset"]), target


def _offsets(value) -> dict:
    return json.loads(value) if isinstance(value, str) else value


def test_resources_are_sampled_for_every_process_and_the_report_follows_the_samples(chain_run):
    samples = [e for e in map(json.loads, (chain_run / "history.jsonl").open()) if e["event"] == "resources"]
    assert len(samples) >= 3
    started = {
        e["process"]: e["pid"]
        for e in map(json.loads, (chain_run / "history.jsonl").open())
        if e["event"] == "process_started"
    }
    seen = {name: value["pid"] for s in samples for name, value in s["rss_mb"].items()}
    # Every process the run started was sampled, under its last pid (the killed drivers' restarts).
    assert set(started) <= set(seen) and all(seen[name] == pid for name, pid in started.items() if name != "generator")
    # A driver's figure is its Python plus its JVM: the largest sample of each is well above a Python alone. (A sample
    # taken seconds after a restart sees a JVM still starting, so the smallest is not.)
    for name in ("streamlet-enrich", "streamlet-score"):
        assert max(s["rss_mb"][name]["mb"] for s in samples if name in s["rss_mb"]) > 250
    # The disk figures are the run directory's, and the drivers' Spark scratch space is in it, not in /tmp.
    assert {"cluster", "checkpoints", "spark-local"} <= set(samples[-1]["disk_mb"])
    # It is also the drivers' working directory: what Spark leaves there after a kill (artifacts/) stays in the run.
    assert sorted(p.name for p in (chain_run / "spark-local").iterdir()) == [
        "artifacts",
        "egress",
        "enrich",
        "ingress",
        "score",
    ]
    report = check_run(chain_run)
    use = report.resources
    assert use.samples == len(samples) and use.max_growth is None  # minutes, not the 10 a process needs to be warm
    assert use.disk_last_mb == round(sum(samples[-1]["disk_mb"].values()), 1)


def _sql(run_dir, *statements):
    with sqlite3.connect(run_dir / "egress" / "egress.sqlite") as db:
        for statement in statements:
            db.execute(*statement) if isinstance(statement, tuple) else db.execute(statement)


def _state_rows(run_dir, n):
    with sqlite3.connect(run_dir / "egress" / "egress.sqlite") as db:
        return db.execute("SELECT key, seq FROM records ORDER BY key, seq LIMIT ?", (n,)).fetchall()


def test_mutations_of_real_evidence_are_found_exactly(chain_run, copy_of):
    base = check_run(chain_run)
    c = base.counts

    deleted = copy_of("deleted")
    victims = _state_rows(deleted, 3)
    _sql(deleted, *[("DELETE FROM records WHERE key = ? AND seq = ?", v) for v in victims])
    report = check_run(deleted)
    assert report.counts.lost == c.lost + 3 and report.causes["lost"]["unexplained"] == 3
    assert set(map(tuple, report.records["lost"][["key", "seq"]].itertuples(index=False))) == set(victims)
    assert report.verdict == "at-most-once"

    audit_copy = copy_of("audit-copy")
    with sqlite3.connect(audit_copy / "egress" / "egress.sqlite") as db:
        single = db.execute("SELECT key, seq FROM audit GROUP BY key, seq HAVING COUNT(*) = 1 LIMIT 1").fetchone()
        db.execute("INSERT INTO audit SELECT * FROM audit WHERE key = ? AND seq = ?", single)
    report = check_run(audit_copy)
    assert report.counts.duplicated_deliveries == c.duplicated_deliveries + 1
    assert report.hops[-1].copies.extra == base.hops[-1].copies.extra + 1
    assert (report.counts.lost, report.counts.duplicated_in_state, report.verdict) == (c.lost, 0, base.verdict)

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
    assert report.counts.duplicated_in_state == 1 and report.verdict == "at-least-once"
    assert report.hops[-1].copies.extra_in_state == 1

    phantoms = copy_of("phantoms")
    key, seq = _state_rows(phantoms, 1)[0]
    odd = [(key, 10_000_000), (key, -1), (key, seq + (1 << 40)), (key, seq + (1 << 41))]  # the last two aliased before
    for table in ("records", "audit"):
        _sql(phantoms, *[(f"INSERT INTO {table} (key, seq, batch_id) VALUES (?, ?, 0)", row) for row in odd])
    report = check_run(phantoms)
    assert report.counts.phantom == 4 and report.verdict == "none"
    assert (report.counts.lost, report.counts.duplicated_deliveries, report.counts.duplicated_in_state) == (
        c.lost,
        c.duplicated_deliveries,
        c.duplicated_in_state,
    )
    assert {(w.key, w.seq) for w in report.witnesses if w.anomaly == "phantom"} == set(odd)

    acks = copy_of("acks")
    lines = (acks / "acks.csv").read_text().splitlines(keepends=True)
    turned = lines[5].split(",")
    lines[5] = ",".join(turned[:4] + ["unknown", "", ""] + turned[7:])  # the outcome unknown, the resend column kept
    (acks / "acks.csv").write_text("".join(lines) + lines[7])  # and line 7 written twice
    report = check_run(acks)
    assert (report.counts.acked, report.counts.unknown) == (c.acked - 1, c.unknown + 1)
    assert (report.counts.lost, report.counts.phantom, report.verdict) == (c.lost, 0, base.verdict)
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


def test_the_engines_give_the_real_runs_report_duckdb_and_dense_here_and_spark_on_a_standalone_cluster(
    chain_run, copy_of
):
    """The reconciliation's plan (harness/checker/summary/) as one SQL text on DuckDB and on Spark (a standalone
    master and worker the test starts; the executors read the run's segments themselves), and in the dense engine's
    arrays: the report numpy gives."""
    from harness.spark.standalone import StandaloneCluster

    compacted = copy_of("engines")
    assert run_harness("compact", str(compacted)).returncode == 0

    def report(*engine) -> dict:
        # a deadline against a hang only: Spark's JVMs share two cores with the other tests' runs
        result = run_harness("check", str(compacted), "--json", *engine, timeout=900)
        assert result.returncode in (0, 3) and result.stdout.startswith("{"), result.stderr[-2000:]
        return json.loads(result.stdout)

    expected = report()
    assert expected["counts"]["duplicated_deliveries"] > 0  # the kills made copies: there is something to find
    assert report("--engine", "duckdb") == expected
    assert report("--engine", "dense") == expected
    with Supervisor(compacted.parent / "spark-pids") as supervisor:
        cluster = StandaloneCluster(supervisor, compacted.parent / "spark", compacted.parent / "spark-logs", 1).start()
        assert report("--engine", "spark", "--master", cluster.master_url) == expected
        status = cluster.status()
    assert [a["name"] for a in status["completedapps"]] == ["harness-check"]  # it ran there, and finished
