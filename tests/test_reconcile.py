"""The reconciliation core on evidence with known anomalies: it finds exactly those, and none on clean evidence."""

from __future__ import annotations

import pandas as pd

from harness.checker.reconcile import Counts, reconcile, verdict


def sent(n_keys=3, per_key=5, unknown=()):
    rows = [(f"k{k}", s, "unknown" if (f"k{k}", s) in unknown else "acked", k % 2, s) for k in range(n_keys) for s in range(per_key)]
    return pd.DataFrame(rows, columns=["key", "seq", "status", "partition", "offset"])


def ids(frame):
    return set(zip(frame.key, frame.seq))


def test_clean_evidence_has_no_anomaly_and_is_exactly_once():
    s = sent()
    result = reconcile(s, s[["key", "seq"]], s[["key", "seq"]])
    assert result.counts == Counts(acked=15, unknown=0, lost=0, duplicated_deliveries=0, duplicated_in_state=0, phantom=0, reordered=0)
    assert verdict(result.counts) == "exactly-once"


def test_injected_anomalies_are_found_exactly():
    s = sent(unknown={("k2", 4)})
    deliveries = s[["key", "seq"]]
    deliveries = deliveries[~deliveries.apply(tuple, axis=1).isin([("k0", 1), ("k2", 4)])]  # k0/1 lost, k2/4 unknown, absent
    deliveries = pd.concat([deliveries, pd.DataFrame([("k1", 2), ("k9", 0)], columns=["key", "seq"])])  # k1/2 twice, k9/0 phantom
    swapped = deliveries.reset_index(drop=True)
    swapped.iloc[[5, 6]] = swapped.iloc[[6, 5]].values  # k1/1 delivered after k1/2: one reorder
    state = deliveries.drop_duplicates()
    result = reconcile(s, swapped, state)
    assert ids(result.lost) == {("k0", 1)}
    assert ids(result.duplicated_deliveries) == {("k1", 2)}
    assert result.duplicated_in_state.empty
    assert ids(result.phantom) == {("k9", 0)}
    assert ids(result.reordered) == {("k1", 1)}
    assert result.counts.unknown == 1 and result.counts.acked == 14
    assert verdict(result.counts) == "none"  # a phantom


def test_verdicts():
    base = dict(acked=10, unknown=0, lost=0, duplicated_deliveries=0, duplicated_in_state=0, phantom=0, reordered=0)
    assert verdict(Counts(**{**base, "duplicated_deliveries": 2})) == "effectively-exactly-once"
    assert verdict(Counts(**{**base, "duplicated_deliveries": 2, "duplicated_in_state": 1})) == "at-least-once"
    assert verdict(Counts(**{**base, "lost": 1, "duplicated_deliveries": 3})) == "at-most-once"
    assert verdict(Counts(**{**base, "lost": 1, "duplicated_in_state": 1})) == "none"
