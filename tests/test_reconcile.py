"""The verdict order and per-key reordering on small hand-made inputs."""

from __future__ import annotations

import numpy as np
import pandas as pd

from harness.checker.evidence import rids
from harness.checker.reconcile import Counts, reconcile, reordered, verdict


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


def test_unknown_outcome_may_be_absent_or_present_once():
    sent = pd.DataFrame({"rid": rids([0, 0, 0], [0, 1, 2]), "acked": [True, False, False]})
    result = reconcile(sent, rids([0, 0], [0, 1]))
    assert result.counts == Counts(acked=1, unknown=2, lost=0, duplicated_deliveries=0, duplicated_in_state=0, phantom=0, reordered=0)
    assert len(result.lost) == 0 and isinstance(result.phantom, np.ndarray) and len(result.phantom) == 0
