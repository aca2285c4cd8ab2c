"""A restricted load (harness/checker/selection.py): with a selection of records, every table the loader reads holds
exactly the rows the whole load holds of those records, in the same order, whatever form the evidence is in."""

from __future__ import annotations

import shutil
import tempfile

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.checker.load import load_evidence
from harness.checker.rid_sets import isin
from harness.checker.selection import Selection
from tests.synthetic_run import write_run
from tests.test_checker_properties import build, plans


def same_rows(part: pd.DataFrame, whole: pd.DataFrame, rids: np.ndarray, what: str) -> None:
    expected = whole[isin(whole.rid.to_numpy(), rids)].reset_index(drop=True)
    if expected.empty:
        # No row of the selected records: an audit's batch stamps are columns named by the stamps its rows carry,
        # so with no row there are none to name.
        assert part.empty, what
        return
    pd.testing.assert_frame_equal(part.reset_index(drop=True), expected, check_dtype=False, obj=what)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(plans(), st.sampled_from(["columnar", "json"]), st.integers(0, 2**32 - 1))
def test_a_selected_load_holds_exactly_the_selected_records_rows(case, recordings, seed):
    sent, plan = case
    flow, history = build(sent, plan)
    root = tempfile.mkdtemp(prefix="selection-")
    try:
        write_run(root, sent, flow, mode=plan.mode, history=history, recordings=recordings)
        whole = load_evidence(root)
        seen = [whole.sent.rid.to_numpy(), *(t.rid.to_numpy() for t in whole.topics.values())]
        seen += [e.audit.rid.to_numpy() for e in whole.egresses] + [e.state.rid.to_numpy() for e in whole.egresses]
        every = np.unique(np.concatenate(seen))  # phantoms too: rids no acknowledgement line has
        rids = every[np.random.default_rng(seed).random(len(every)) < 0.3]
        part = load_evidence(root, Selection(whole.ids, rids))
        same_rows(part.sent, whole.sent, rids, "sent")
        assert part.topics.keys() == whole.topics.keys()
        for topic, rows in whole.topics.items():
            same_rows(part.topics[topic], rows, rids, f"topics/{topic}")
        assert [e.name for e in part.egresses] == [e.name for e in whole.egresses]
        for a, b in zip(part.egresses, whole.egresses):
            same_rows(a.audit, b.audit, rids, f"{b.name} audit")
            same_rows(a.state, b.state, rids, f"{b.name} state")
    finally:
        shutil.rmtree(root)
