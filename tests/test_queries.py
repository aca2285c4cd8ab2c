"""Several queries in one driver (examples/two-queries): a kill of the driver is a kill of both; each query's
output is judged on its own hop, each count equal to one made here from the raw outputs (the table's committed
files read with pyarrow, the topic's dump parsed line by line), and the report has a row for each query."""

from __future__ import annotations

import csv
import json
from collections import Counter
from datetime import datetime

import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
import yaml
from kafka import KafkaProducer

from harness.checker.check import check_run
from harness.checker.counts import COUNTS
from harness.checker.expect import EXPECTATIONS
from harness.cluster import EmbeddedCluster
from harness.report.write import write_reports
from harness.runner.console import Console
from harness.runner.run import run_scenario
from harness.scenario.parse import parse_scenario
from tests.evidence_helpers import acked, run_example, why
from tests.test_application_files import _kills, _sink_state
from tests.test_faults import ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.long, pytest.mark.timeout(900)]  # make test-long
EXAMPLE = ROOT / "examples" / "two-queries"


def _ids(values) -> Counter:
    return Counter((key, int(seq)) for key, _, seq in (v.rpartition("-") for v in values))


def test_two_queries_of_one_driver_killed_together_are_each_judged_on_their_own_output(tmp_path):
    run_dir = tmp_path / "run"
    report = run_example(EXAMPLE, "scenario.yaml", run_dir)
    assert len(_kills(run_dir)) == 2 and report.outcome == "pass", report[EXPECTATIONS]
    table = run_dir / "work" / "lake" / "table"
    lake = _ids(
        v for name in _sink_state(table) for v in ds.dataset(str(table / name)).to_table(["order_id"])[0].to_pylist()
    )
    lines = (run_dir / "topics" / "orders-audit.jsonl").read_text().splitlines()
    audit = _ids(json.loads(line)["value"]["order_id"] for line in lines)  # the recorder parsed each value
    sent = acked(run_dir)
    written = json.loads(write_reports(report, run_dir)["json"].read_text())
    hops = {hop["name"]: hop["counts"] for hop in written["hops"]}
    for name, found in (("lake", lake), ("audit", audit)):
        assert hops[name]["lost"] == len(sent - set(found)) == 0, name
        assert hops[name]["duplicated_in_state"] == sum(1 for r, n in found.items() if n > 1 and r in sent), name
        assert hops[name]["phantom"] == len(set(found) - sent) == 0, name
    rows = {row[0]: row[1] for row in report.sections["batches"].rows}
    assert set(rows) == {"orders (audit)", "orders (lake)"} and all(n > 0 for n in rows.values())
    checkpoints = sorted(p.name for p in (run_dir / "checkpoints" / "orders").iterdir())
    assert checkpoints == ["audit", "lake"]


SHOP = ROOT / "examples" / "shop-topics"


def _of(sent: set, topic: str) -> set:
    """The acknowledged records sent to one source topic (its keys' prefix)."""
    return {(key, seq) for key, seq in sent if key.startswith(f"{topic}:")}


def _table_ids(run_dir, output: str, column: str) -> Counter:
    table = run_dir / "work" / output / "table"
    return _ids(
        v for name in _sink_state(table) for v in ds.dataset(str(table / name)).to_table([column])[0].to_pylist()
    )


def test_three_source_topics_read_by_three_queries_are_each_judged_against_their_own_topic(tmp_path):
    run_dir = tmp_path / "run"
    report = run_example(SHOP, "scenario.yaml", run_dir)
    assert len(_kills(run_dir)) == 2 and report.outcome == "pass", report[EXPECTATIONS]
    lines = (run_dir / "topics" / "payments-fees.jsonl").read_text().splitlines()
    outputs = {
        "orders-lake": ("orders", _table_ids(run_dir, "orders-lake", "order_id")),
        "shipments-lake": ("shipments", _table_ids(run_dir, "shipments-lake", "shipment_id")),
        "fees": ("payments", _ids(json.loads(line)["value"]["payment_id"] for line in lines)),
    }
    sent = acked(run_dir)
    hops = {
        hop["name"]: hop["counts"] for hop in json.loads(write_reports(report, run_dir)["json"].read_text())["hops"]
    }
    for name, (topic, found) in outputs.items():
        mine = _of(sent, topic)
        assert mine and hops[name]["acked"] == len(mine), name
        assert hops[name]["lost"] == len(mine - set(found)) == 0, name
        assert hops[name]["duplicated_in_state"] == sum(1 for r, n in found.items() if n > 1), name
        assert hops[name]["phantom"] == len(set(found) - mine) == 0, name
    assert sum(len(_of(sent, t)) for t in ("orders", "payments", "shipments")) == len(sent)
    assert sorted(p.name for p in (run_dir / "checkpoints" / "shop").iterdir()) == ["orders", "payments", "shipments"]


@pytest.mark.parametrize("theirs", [False, True], ids=["embedded", "on-a-cluster-one-runs"])
def test_a_subscribe_pattern_over_two_source_topics_lands_both_once(tmp_path, theirs):
    """${topic_prefix}shop-.*: on a cluster one runs, the run's topics are in its namespace, and the pattern with
    it matches them, not a namesake outside it (shop-clicks there, which holds a record no one sent)."""
    raw = yaml.safe_load((SHOP / "pattern.yaml").read_text())
    run_dir = tmp_path / "run"
    with EmbeddedCluster.create(tmp_path / "theirs", brokers=1) as cluster:
        if theirs:
            cluster.start()
            with cluster.admin() as admin:
                admin.create_topic("shop-clicks", partitions=1)
            with KafkaProducer(bootstrap_servers=cluster.bootstrap_servers) as producer:
                producer.send("shop-clicks", b'{"event_id": "shop-clicks:k0000-0", "kind": "theirs"}').get(30)
            raw["cluster"] = {"bootstrap_servers": cluster.bootstrap_servers}
        summary = run_scenario(parse_scenario(raw, SHOP), run_dir, console=Console(quiet=True))
    assert summary.status == "complete" and not summary.failed_streamlets, why(summary)
    report = check_run(run_dir)
    assert len(_kills(run_dir)) == 2 and report.outcome == "pass", report[EXPECTATIONS]
    found, sent = _table_ids(run_dir, "events", "event_id"), acked(run_dir)
    assert _of(sent, "shop-clicks") and _of(sent, "shop-views")
    assert set(found) == sent and all(n == 1 for n in found.values())


def _source_values(run_dir, topic: str) -> list[tuple[str, dict, int]]:
    """A source topic's records drawn by the workload, as the run read them back after it: key, value, broker
    timestamp (the preflight's canary left out)."""
    table = pq.read_table(run_dir / "source" / f"{topic}.parquet", columns=["key", "value", "timestamp_ms"])
    drawn = [r for r in table.to_pylist() if r["value"] and r["key"].startswith(f"{topic}:k")]
    return [(r["key"], json.loads(r["value"]), r["timestamp_ms"]) for r in drawn]


def test_payments_and_shipments_answering_orders_are_counted_as_the_source_topics_hold_them(tmp_path):
    """examples/shop-topics/partners.yaml: the report's Partners section against the topics read back: each answer
    names an order sent, none twice; the orders left unanswered are the declared missing ones; the late payments are
    those sent seconds after their order."""
    run_dir = tmp_path / "run"
    report = run_example(SHOP, "partners.yaml", run_dir)
    assert len(_kills(run_dir)) == 2 and report.outcome == "pass", report[EXPECTATIONS]
    sent = acked(run_dir)
    placed = {v["order_id"]: t for _, v, t in _source_values(run_dir, "orders")}
    orders = {f"{key}-{seq}" for key, seq in _of(sent, "orders") if key.startswith("orders:k")}  # the canary's not
    assert set(placed) >= orders
    found = report.sections["partners"].data
    for topic in ("payments", "shipments"):
        answers = Counter(v["order_id"] for _, v, _ in _source_values(run_dir, topic))
        counts = found[topic]
        assert counts["answers"] == "orders" and counts["records"] == len(orders), topic
        assert set(answers) <= orders and set(answers.values()) == {1}, topic
        assert counts["acknowledged"] == counts["answered"] + counts["late"] == len(answers), topic
        assert counts["missing"] + counts["unsent"] == len(orders - set(answers)) > 0, topic
    waited = [(t - placed[v["order_id"]]) / 1000 for _, v, t in _source_values(run_dir, "payments")]
    assert found["payments"]["late"] == sum(w >= 2.5 for w in waited) > 0
    assert found["shipments"]["late"] == 0


def _created_ms(value: dict) -> int:
    return int(datetime.fromisoformat(value["created"].replace("Z", "+00:00")).timestamp() * 1000)


def test_orders_joined_with_their_payments_within_the_bound_are_the_results_due_and_no_other(tmp_path):
    """examples/shop-topics/join.yaml: the results due are the orders whose payment the source topics hold within 5 s
    of them; the join's output holds each of them and nothing else, and the rest are dropped by design."""
    run_dir = tmp_path / "run"
    report = run_example(SHOP, "join.yaml", run_dir)
    assert len(_kills(run_dir)) == 2 and report.outcome == "pass", report[EXPECTATIONS]
    placed = {v["order_id"]: _created_ms(v) for _, v, _ in _source_values(run_dir, "orders")}
    paid = {v["order_id"]: _created_ms(v) for _, v, _ in _source_values(run_dir, "payments")}
    due = {order for order, at in placed.items() if order in paid and 0 <= paid[order] - at <= 5000}
    lines = (run_dir / "topics" / "paid-orders.jsonl").read_text().splitlines()
    found = Counter(json.loads(line)["value"]["order_id"] for line in lines)
    assert set(found) == due and 0 < len(due) < len(placed)
    counts = report[COUNTS]
    assert counts.lost == 0 and counts.dropped == len(placed) - len(due) + 1  # and the canary, answered by none
    assert counts.duplicated_in_state == sum(n > 1 for n in found.values())
    assert report.sections["joins"].data["paid"]["due"] == len(due)


def test_a_left_outer_join_gives_each_order_a_row_joined_with_its_payment_or_padded_and_judges_each_kind(tmp_path):
    """examples/shop-topics/left-join.yaml: every order has a row, after the closing records made the last padded ones
    due; those paid within 5 s name their payment, the others none, as counted here from the source topics read back
    and the output's dump; the report's Joins section counts the same, the canary's and closing rows not due."""
    run_dir = tmp_path / "run"
    report = run_example(SHOP, "left-join.yaml", run_dir)
    assert len(_kills(run_dir)) == 2 and report.outcome == "pass", report[EXPECTATIONS]
    placed = {v["order_id"]: _created_ms(v) for _, v, _ in _source_values(run_dir, "orders")}
    paid = {v["order_id"]: (_created_ms(v), v["payment_id"]) for _, v, _ in _source_values(run_dir, "payments")}
    due = {order: paid[order][1] for order, at in placed.items() if order in paid and 0 <= paid[order][0] - at <= 5000}
    lines = (run_dir / "topics" / "orders-with-payments.jsonl").read_text().splitlines()
    rows = [json.loads(line)["value"] for line in lines]
    joined = {r["order_id"] for r in rows if r.get("payment_id") is not None and r["order_id"] in placed}
    padded = {r["order_id"] for r in rows if r.get("payment_id") is None and r["order_id"] in placed}
    assert joined | padded == set(placed) and 0 < len(due) < len(placed)
    lost = (padded & set(due)) - joined
    phantom = {
        r["order_id"] for r in rows if r.get("payment_id") is not None and due.get(r["order_id"]) != r["payment_id"]
    }
    outer = report.sections["joins"].data["with-payments"]["outer"]
    assert outer == {
        "joined_due": len(due),
        "padded_due": len(placed) - len(due),
        "joined": len(joined),
        "padded": len(padded),
        "answers_lost": len(lost),
        "phantom_joins": len(phantom),
    }
    assert lost == phantom == set() and report[COUNTS].lost == 0
    assert report[COUNTS].dropped == 2  # the canary's row and the closing record's are not due
    # a joined row padded in the dump: the answer lost, named, and the run's verdict bounded by it
    once = Counter(r["order_id"] for r in rows)
    hit = next(
        i for i, r in enumerate(rows) if r["order_id"] in joined and r["order_id"] in due and once[r["order_id"]] == 1
    )
    line = json.loads(lines[hit])
    del line["value"]["payment_id"]
    lines[hit] = json.dumps(line)
    (run_dir / "topics" / "orders-with-payments.jsonl").write_text("\n".join(lines) + "\n")
    judged = check_run(run_dir)
    wrong = judged.sections["joins"]
    assert wrong.data["with-payments"]["outer"]["answers_lost"] == 1 and rows[hit]["order_id"] in " ".join(wrong.lines)
    assert wrong.data["outputs_verdict"] == "at-most-once" and judged.outcome == "fail"


def test_orders_joined_with_a_static_table_are_those_of_its_customers_and_the_rest_dropped_by_design(tmp_path):
    """examples/static-join: the orders whose customer the CSV table knows are the output's, once or more, and the
    others (dee's) dropped by design, as counted from the source topic read back and the table read here."""
    folder = ROOT / "examples" / "static-join"
    run_dir = tmp_path / "run"
    report = run_example(folder, "scenario.yaml", run_dir)
    assert len(_kills(run_dir)) == 2 and report.outcome == "pass", report[EXPECTATIONS]
    known = {row["customer"] for row in csv.DictReader((folder / "customers.csv").read_text().splitlines())}
    table = pq.read_table(run_dir / "source" / "orders.parquet", columns=["value"]).to_pylist()
    orders = [json.loads(r["value"]) for r in table if r["value"]]
    due = {o["order_id"] for o in orders if o["customer"] in known}
    lines = (run_dir / "topics" / "orders-by-region.jsonl").read_text().splitlines()
    found = Counter(json.loads(line)["value"]["order_id"] for line in lines)
    assert set(found) == due and 0 < len(due) < len(orders)
    counts = report[COUNTS]
    assert counts.lost == 0 and counts.dropped == len(orders) - len(due)
    assert counts.duplicated_in_state == sum(n > 1 for n in found.values())
