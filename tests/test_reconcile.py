"""The verdict order and per-key reordering on small hand-made inputs."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.checker import reconcile as reconcile_module
from harness.checker.reconcile import Counts, combine, reconcile, reordered, verdict
from harness.checker.record_ids import rids


def test_verdicts():
    base = dict(acked=10, unknown=0, lost=0, duplicated_deliveries=0, duplicated_in_state=0, phantom=0, reordered=0)
    assert verdict(Counts(**base)) == "exactly-once"
    assert verdict(Counts(**{**base, "duplicated_deliveries": 2})) == "effectively-exactly-once"
    assert verdict(Counts(**{**base, "duplicated_deliveries": 2, "duplicated_in_state": 1})) == "at-least-once"
    assert verdict(Counts(**{**base, "lost": 1, "duplicated_deliveries": 3})) == "at-most-once"
    assert verdict(Counts(**{**base, "lost": 1, "duplicated_in_state": 1})) == "none"
    assert verdict(Counts(**{**base, "phantom": 1})) == "none"


def test_reordering_is_per_key_and_counts_first_deliveries_only():
    # key 0: 0, 2, 1 (1 is late); key 1: 0, 1; a replay of key 0's 0 afterwards is a duplicate, not a reorder
    delivered = rids([0, 1, 0, 1, 0, 0], [0, 0, 2, 1, 1, 0])
    late = reordered(delivered)
    assert late.rid.tolist() == rids([0], [1]).tolist() and late.after_seq.tolist() == [2]


def _highest_before_by_pandas(group: np.ndarray, seq: np.ndarray) -> list[int]:
    frame = pd.DataFrame({"key": group, "seq": seq})
    expected = frame.groupby("key", sort=False).seq.cummax().groupby(frame.key, sort=False).shift(1)
    return expected.fillna(-1).astype(np.int64).tolist()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 6), st.integers(0, (1 << 40) - 1)), max_size=60),
    st.sampled_from([1, 2, 3, reconcile_module.GROUPS_PER_PASS]),
)
def test_the_highest_seq_before_each_position_is_pandas_groupby_cummax_shifted(pairs, per_pass):
    """The numpy running maximum (several passes when the groups are many: here a few per pass) against the pandas
    formulation it replaced."""
    group = np.array([g for g, _ in pairs], np.int64)
    seq = np.array([q for _, q in pairs], np.int64)
    saved, reconcile_module.GROUPS_PER_PASS = reconcile_module.GROUPS_PER_PASS, per_pass
    try:
        got = reconcile_module.highest_before(group, seq)
    finally:
        reconcile_module.GROUPS_PER_PASS = saved
    assert got.tolist() == _highest_before_by_pandas(group, seq)


def test_the_highest_seq_before_each_position_with_more_groups_than_a_radix_sort_takes():
    rng = np.random.default_rng(7)
    group = rng.integers(0, 1 << 40, 200_000) // 3 * 3  # about 200,000 groups, most of one position, some of more
    group[::5] = group[0]
    seq = rng.integers(0, 1 << 40, len(group))
    assert reconcile_module.highest_before(group, seq).tolist() == _highest_before_by_pandas(group, seq)


def test_unknown_outcome_may_be_absent_or_present_once():
    sent = pd.DataFrame({"rid": rids([0, 0, 0], [0, 1, 2]), "acked": [True, False, False]})
    result = reconcile(sent, rids([0, 0], [0, 1]))
    assert result.counts == Counts(
        acked=1, unknown=2, lost=0, duplicated_deliveries=0, duplicated_in_state=0, phantom=0, reordered=0
    )
    assert len(result.lost) == 0 and isinstance(result.phantom, np.ndarray) and len(result.phantom) == 0


def test_end_to_end_over_a_fan_out_counts_a_record_wrong_at_any_egress_once():
    sent = pd.DataFrame({"rid": rids([0] * 6, range(6)), "acked": [True] * 6})
    # egress a: loses seq 1, delivers seq 2 twice and stores it twice; egress b: loses 1 and 5,
    # delivers 2 three times (stored once), delivers 4 before 3, and a record never sent
    a = reconcile(sent, rids([0] * 6, [0, 2, 2, 3, 4, 5]), rids([0] * 5, [0, 2, 2, 3, 4]))
    b = reconcile(sent, rids([0] * 7, [0, 2, 2, 2, 4, 3, 9]), rids([0] * 4, [0, 2, 3, 4]))
    both = combine([a, b])
    assert both.counts == Counts(
        acked=6, unknown=0, lost=2, duplicated_deliveries=1, duplicated_in_state=1, phantom=1, reordered=1
    )
    assert both.lost.tolist() == rids([0, 0], [1, 5]).tolist()
    assert both.duplicated_deliveries.to_dict() == {int(rids([0], [2])[0]): 3}
    assert verdict(both.counts) == "none" and verdict(a.counts) == "none" and combine([a]) is a


def test_records_dropped_by_design_upstream_are_dropped_not_lost():
    sent = pd.DataFrame({"rid": rids([0] * 5, range(5)), "acked": [True, True, True, True, False]})
    # seq 1 and 4 declared dropped (4 was never acked: not counted); seq 3 missing without a declaration
    result = reconcile(sent, rids([0, 0], [0, 2]), dropped=rids([0, 0], [1, 4]))
    assert (result.counts.lost, result.counts.dropped) == (1, 1)
    assert result.lost.tolist() == rids([0], [3]).tolist() and result.dropped.tolist() == rids([0], [1]).tolist()
    assert verdict(result.counts) == "at-most-once"
    without = reconcile(sent, rids([0, 0], [0, 2]))
    assert (without.counts.lost, without.counts.dropped) == (2, 0)
    fan_out = combine([result, reconcile(sent, rids([0] * 4, [0, 1, 2, 3]))])
    assert (fan_out.counts.lost, fan_out.counts.dropped) == (1, 0)  # seq 1 was delivered where it went
    # Routed: seq 1 is the dead letter's, the others the main output's; seq 3 is lost at the main one.
    main = reconcile(sent, rids([0, 0], [0, 2]), dropped=rids([0, 0], [1, 4]))
    dead = reconcile(sent, rids([0], [1]), dropped=rids([0, 0, 0, 0], [0, 2, 3, 4]))
    routed = combine([main, dead])
    assert (routed.counts.lost, routed.counts.dropped) == (1, 0) and routed.lost.tolist() == rids([0], [3]).tolist()
    both = combine([result, reconcile(sent, rids([0, 0], [0, 2]), dropped=rids([0], [1]))])
    assert both.counts.dropped == 1 and both.dropped.tolist() == rids([0], [1]).tolist()
