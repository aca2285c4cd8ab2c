"""The running-aggregate judge (harness/checker/aggregates.py) on outputs made here from the records, with anomalies
injected on purpose: a replayed batch counted twice, a record never counted, a group no record has, a value no
records make, a value written again, one written that no batch gives; each found exactly, with its group, batches
and records. And the scenario's `aggregate` and the values log it is judged from."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.checker.aggregates import EXACT, NO_BATCH, OVER, PHANTOM, SHORT, UNEXPLAINED, UNKNOWN, judge
from harness.errors import HarnessError
from harness.evidence.values import ValueLog, read_values
from harness.scenario.parse import parse_scenario
from tests.test_faults import ROOT

EXAMPLE = ROOT / "examples" / "account-totals"
VALUES = {
    "orders": {"op": "count", "field": None},
    "total": {"op": "sum", "field": "amount"},
    "largest": {"op": "max", "field": "amount"},
}
UPDATE = {"group": ["account"], "values": VALUES, "mode": "update"}
INCREMENTS = {**UPDATE, "mode": "increments"}


@st.composite
def sent(draw) -> pd.DataFrame:
    """Records of a few accounts over a few batches, each with an amount in cents."""
    n = draw(st.integers(4, 40))
    accounts = draw(st.lists(st.sampled_from("abcde"), min_size=n, max_size=n))
    batches = sorted(draw(st.lists(st.integers(0, 5), min_size=n, max_size=n)))
    cents = draw(st.lists(st.integers(100, 50_000), min_size=n, max_size=n))
    return pd.DataFrame(
        {
            "account": accounts,
            "group": accounts,
            "amount": [c / 100 for c in cents],
            "acked": True,
            "batch": batches,
            "name": [f"{a}:{i}" for i, a in enumerate(accounts)],
        }
    )


def _value(records: pd.DataFrame) -> dict:
    return {"orders": len(records), "total": round(records.amount.sum(), 2), "largest": records.amount.max()}


def output(records: pd.DataFrame, aggregate: dict, twice: tuple[int, ...] = ()) -> pd.DataFrame:
    """What the job writes, batch by batch: each group its batch touched, its value after it (update mode) or its
    part of the batch (increments); the batches in `twice` written again right after (a replay)."""
    rows = []
    for batch in sorted(records.batch.unique()):
        for _ in range(2 if batch in twice else 1):
            read = records[records.batch == batch]
            for account in read.account.unique():
                mine = records[(records.account == account) & (records.batch <= batch)]
                part = read[read.account == account]
                value = _value(part if aggregate["mode"] == "increments" else mine)
                rows.append({"group": account, **value})
    return pd.DataFrame(rows, columns=["group", *VALUES])


@settings(max_examples=60)
@given(sent(), st.sampled_from([UPDATE, INCREMENTS]))
def test_an_output_made_from_every_record_once_is_exact(records, aggregate):
    judged = judge(records, output(records, aggregate), aggregate)
    assert {g.status for g in judged.groups} == {EXACT}
    assert judged.verdict == "exactly-once" and judged.written.unexplained == 0


@settings(max_examples=60)
@given(sent(), st.data())
def test_batches_written_twice_in_increments_are_counted_twice_with_their_records(records, data):
    twice = tuple(data.draw(st.sets(st.sampled_from(sorted(records.batch.unique())), min_size=1, max_size=2)))
    judged = judge(records, output(records, INCREMENTS, twice), INCREMENTS, suspects=twice)
    for group in judged.groups:
        doubled = records[(records.group == group.group) & records.batch.isin(twice)]
        assert group.status == (OVER if len(doubled) else EXACT), group
        assert group.doubled == len(doubled) and set(group.records) == set(doubled.name), group
    assert judged.counts.duplicated_in_state == int(records.batch.isin(twice).sum())
    assert judged.verdict == "at-least-once"


@settings(max_examples=60)
@given(sent(), st.data())
def test_in_update_mode_a_batch_written_again_is_a_copy_and_the_totals_stay_right(records, data):
    twice = (data.draw(st.sampled_from(sorted(records.batch.unique()))),)
    judged = judge(records, output(records, UPDATE, twice), UPDATE, suspects=twice)
    assert {g.status for g in judged.groups} == {EXACT}
    assert judged.written.copies == records[records.batch == twice[0]].account.nunique()
    assert judged.verdict == "effectively-exactly-once"


@settings(max_examples=60)
@given(sent(), st.data(), st.sampled_from([UPDATE, INCREMENTS]))
def test_a_record_never_counted_makes_its_group_short_by_it(records, data, aggregate):
    missing = data.draw(st.integers(0, len(records) - 1))
    judged = judge(records, output(records.drop(index=missing), aggregate), aggregate)
    lost = records.loc[missing]
    others = [g for g in judged.groups if g.group != lost.group]
    (group,) = [g for g in judged.groups if g.group == lost.group]
    assert group.status == SHORT and group.lost == 1, group
    named = records[records.name.isin(group.records)]  # a batch's record of the same values explains it as well
    assert not len(named) or (len(named) == 1 and named.amount.iloc[0] == lost.amount), group
    assert {g.status for g in others} <= {EXACT} and judged.counts.lost == 1
    assert judged.verdict == "at-most-once"


@settings(max_examples=40)
@given(sent())
def test_a_group_no_record_has_is_a_phantom_and_a_value_no_record_makes_is_unexplained(records):
    rows = output(records, UPDATE)
    strange = pd.DataFrame([{"group": "zz", "orders": 1, "total": 5.0, "largest": 5.0}])
    first = rows.group.iloc[-1]
    wrong = rows[rows.group == first].iloc[-1:].assign(total=lambda f: f.total + 0.5)  # no record is 0.50
    judged = judge(records, pd.concat([rows, strange, wrong], ignore_index=True), UPDATE)
    statuses = {g.group: g.status for g in judged.groups}
    assert statuses.pop("zz") == PHANTOM and statuses.pop(first) == UNEXPLAINED
    assert set(statuses.values()) <= {EXACT} and judged.counts.phantom == 2
    assert judged.verdict == "none"


@settings(max_examples=40)
@given(sent())
def test_a_value_written_that_no_batch_gives_is_found_though_its_group_ends_right(records):
    rows = output(records, UPDATE)
    group = rows.group.iloc[0]
    wrong = rows.iloc[:1].assign(orders=lambda f: f.orders + 1000)
    judged = judge(records, pd.concat([wrong, rows], ignore_index=True), UPDATE)
    assert {g.status for g in judged.groups} == {EXACT}
    assert judged.written.unexplained == 1 and judged.written.groups == {group}
    assert judged.verdict == "none"


def test_a_difference_records_of_unknown_delivery_explain_is_exact_and_one_they_may_is_not_judged():
    records = pd.DataFrame(
        {
            "account": ["a"] * 4,
            "group": ["a"] * 4,
            "amount": [1.0, 2.0, 3.0, 4.0],
            "acked": [True, True, False, False],
            "batch": [0, 0, 1, 1],
            "name": ["a:0", "a:1", "a:2", "a:3"],
        }
    )
    delivered = judge(records, output(records, UPDATE), UPDATE)
    assert [g.status for g in delivered.groups] == [EXACT]
    half = judge(records, output(records.iloc[:3], UPDATE), UPDATE)
    assert [g.status for g in half.groups] == [UNKNOWN] and half.verdict == "unknown"


def test_records_no_batch_is_known_to_have_read_leave_the_values_written_unjudged():
    records = pd.DataFrame(
        {
            "account": ["a", "a"],
            "group": ["a", "a"],
            "amount": [1.0, 2.0],
            "acked": True,
            "batch": NO_BATCH,
            "name": ["a:0", "a:1"],
        }
    )
    rows = pd.DataFrame([{"group": "a", "orders": 2, "total": 3.0, "largest": 2.0}])
    judged = judge(records, rows, UPDATE)
    assert [g.status for g in judged.groups] == [EXACT] and judged.written.unexplained is None


def test_the_values_log_is_read_back_without_the_line_a_kill_cut(tmp_path):
    log = ValueLog(tmp_path / "generator.csv", ["account", "amount"])
    log.note("k0", 0, {"account": "k0", "amount": 1.5})
    log.note("k0", 1, {"account": "k0", "amount": None})
    log.close()
    with open(tmp_path / "generator.csv", "a") as f:
        f.write('k0,2,"k0')
    found = read_values(tmp_path, ["account", "amount", "missing"])
    assert found[["key", "seq", "account"]].to_dict("records") == [
        {"key": "k0", "seq": 0, "account": "k0"},
        {"key": "k0", "seq": 1, "account": "k0"},
    ]
    assert found.amount.iloc[0] == 1.5 and pd.isna(found.amount.iloc[1]) and found.missing.isna().all()


@pytest.mark.parametrize(
    "aggregate, where, says",
    [
        ({"group": "nope", "values": {"n": "count"}}, "aggregate.group[0]", "expected a field of workload.record"),
        ({"group": "account", "values": {"n": "median(amount)"}}, "aggregate.values.n", "expected count, count(FIELD)"),
        ({"group": "account", "values": {"n": "sum(created)"}}, "aggregate.values.n", "'created' is not a number"),
        ({"group": "account", "values": {"n": "sum"}}, "aggregate.values.n", "sum of what?"),
        (
            {"group": "account", "values": {"n": "avg(amount)"}, "mode": "increments"},
            "aggregate.values.n",
            "which it cannot for avg",
        ),
        ({"group": "account", "values": {}}, "aggregate.values", "no value column"),
        ({"group": "account", "values": {"n": "count"}, "window": "1 minute"}, "aggregate", "window"),
    ],
)
def test_an_aggregate_the_harness_cannot_judge_is_refused_in_one_line(aggregate, where, says):
    raw = yaml.safe_load((EXAMPLE / "scenario.yaml").read_text())
    raw["outputs"]["balances"]["aggregate"] = aggregate
    with pytest.raises(HarnessError) as caught:
        parse_scenario(raw, EXAMPLE)
    assert f"outputs.balances.{where}" in str(caught.value) and says in str(caught.value), str(caught.value)


def test_an_output_holding_an_aggregate_has_no_identity():
    raw = yaml.safe_load((EXAMPLE / "scenario.yaml").read_text())
    raw["outputs"]["balances"]["identity"] = {"key": "account", "seq": "order_no"}
    with pytest.raises(HarnessError, match="outputs.balances.identity: an output holding an aggregate"):
        parse_scenario(raw, EXAMPLE)


LATEST = {"group": ["account"], "values": {"amount": {"op": "last", "field": "amount"}}, "mode": "update"}


@settings(max_examples=60)
@given(sent(), st.data())
def test_a_stale_newest_value_loses_the_records_sent_after_the_one_it_holds(records, data):
    """The latest record per key: a group holding an older record's value lost every record of it sent later."""
    account = data.draw(st.sampled_from(sorted(records.account.unique())))
    mine = records[records.account == account]
    held = data.draw(st.integers(0, len(mine) - 1))
    rows = pd.DataFrame(
        [
            {"group": a, "amount": (mine.amount.iloc[held] if a == account else r.amount.iloc[-1])}
            for a, r in records.groupby("account", sort=False)
        ]
    )
    judged = judge(records, rows, LATEST)
    (group,) = [g for g in judged.groups if g.group == account]
    newest_held = int(np.flatnonzero(mine.amount.to_numpy() == mine.amount.iloc[held])[-1])  # same value, newer
    newer = mine.iloc[newest_held + 1 :]
    if not len(newer):
        assert group.status == EXACT, group
    else:
        assert group.status == SHORT and group.lost == len(newer), group
        assert list(group.records) == list(newer.name), group
    assert {g.status for g in judged.groups if g.group != account} <= {EXACT}


def test_a_windows_start_is_read_as_spark_writes_it_and_named_as_the_records_windows_are():
    from harness.checker.aggregate_windows import start_ms, windowed

    ms = 1_796_300_010_000
    assert {start_ms(v) for v in ("2026-12-03T12:13:30.000Z", "2026-12-03T12:13:30", ms, ms / 1000)} == {float(ms)}
    assert start_ms("not a time") is None and start_ms(None) is None
    named = windowed(pd.Series(["k0001"]), pd.Series([ms]))
    assert named.tolist() == ["k0001 @ 2026-12-03T12:13:30Z"]


def test_a_tables_values_are_its_new_groups_inserts_and_every_update_not_an_upserts_insert_attempt():
    from harness.outputs.aggregate import written_values

    audit = [
        ("insert", 1, 10, {"account": "a", "orders": 2}),  # a new group: its row's first value
        ("insert", 2, 20, {"account": "a", "orders": 3}),  # an upsert's attempt on a group there: not a value
        ("update", 2, 21, {"account": "a", "orders": 5}),  # the value it made
        ("insert", 2, 22, {"account": "b", "orders": 1}),
    ]
    assert written_values(audit, ["account"]) == [(10, audit[0][3]), (21, audit[2][3]), (22, audit[3][3])]
