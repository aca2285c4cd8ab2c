"""A re-created source's eras (harness/checker/eras.py) found a chunk at a time, and the records the causes read:
with them loaded beside any others, each loaded record's era, offset bounds and unread state are what the whole log
gives it (what lets the default check load only the notable records of a run whose source was re-created)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.checker.causes import _offset_bounds, source_eras
from harness.checker.eras import Needed, Recreation, Starts, eras

LOGS = st.fixed_dictionaries(
    {
        "partitions": st.lists(st.lists(st.integers(0, 12), min_size=1, max_size=4), min_size=1, max_size=3),
        "seed": st.integers(0, 2**31),
        "placeless": st.floats(0, 0.3),
        "backwards": st.floats(0, 0.1),  # offsets going back within a topic (more than the re-creations explain)
        "late": st.floats(0, 0.2),
        "recreations": st.integers(1, 3),
    }
)


def _log(case: dict) -> tuple[pd.DataFrame, list[Recreation]]:
    """Acknowledgement lines in send order: per partition, its topics' records (each topic's offsets from a random
    start, rising), the partitions interleaved at random, some acknowledged without an offset, some not
    acknowledged, some sent late (their time set back); the deletions at random send times."""
    rng = np.random.default_rng(case["seed"])
    queues = []
    for p, topics in enumerate(case["partitions"]):
        rows = []
        for n in topics:
            offset = int(rng.integers(0, 30))
            for _ in range(n):
                offset += int(rng.integers(1, 3)) if rng.random() >= case["backwards"] else -int(rng.integers(0, 5))
                rows.append((p, max(offset, 0)))
        queues.append(rows)
    order = rng.permutation([p for p, rows in enumerate(queues) for _ in rows])
    lines = [queues[p].pop(0) for p in order]
    n = len(lines)
    sent = pd.DataFrame(lines, columns=["partition", "offset"]).assign(
        acked=rng.random(n) >= 0.05, event_time_ms=np.arange(n) * 10
    )
    sent.loc[rng.random(n) < case["placeless"], "offset"] = -1
    late = rng.random(n) < case["late"]
    sent.loc[late, "event_time_ms"] -= rng.integers(0, 200, late.sum())
    deleted = np.sort(rng.integers(-50, n * 10 + 50, case["recreations"]))
    made = [
        Recreation(int(d), int(d) + 5, "ingress", {p: int(rng.integers(0, 40)) for p in range(len(queues))})
        for d in deleted
    ]
    return sent, made


def _chunks(sent: pd.DataFrame, cuts: np.ndarray):
    """The acknowledged lines as chunks cut at `cuts` (positions, ids: the rows' places in `sent`)."""
    rows = np.flatnonzero(sent.acked.to_numpy())
    for part in np.split(rows, np.searchsorted(rows, cuts)):
        yield tuple(sent[c].to_numpy()[part] for c in ("partition", "offset", "event_time_ms")) + (part, part)


@settings(max_examples=300, deadline=None)
@given(LOGS, st.lists(st.integers(0, 80), max_size=6), st.floats(0, 1))
def test_the_records_the_causes_read_give_each_loaded_record_what_the_whole_log_gives_it(case, cuts, share):
    sent, made = _log(case)
    cuts = np.unique(cuts)
    starts = Starts(made)
    for partition, offset, sent_ms, position, _ in _chunks(sent, cuts):
        starts.feed(partition, offset, sent_ms, position)
    whole = source_eras(sent, made)
    acked = sent.acked.to_numpy()
    rows = np.flatnonzero(acked)
    found = eras(starts.found(), sent.partition.to_numpy()[rows], rows)
    assert found.tolist() == whole[rows].tolist()  # a chunk at a time, as the whole log at once

    needed = Needed(starts.found(), made)
    for chunk in _chunks(sent, cuts):
        needed.feed(*chunk)
    others = np.flatnonzero(np.random.default_rng(case["seed"]).random(len(sent)) < share)
    loaded = np.union1d(needed.found(), others)
    subset = sent.iloc[loaded].reset_index(drop=True)
    era = source_eras(subset, made)
    assert era[subset.acked.to_numpy()].tolist() == whole[loaded][acked[loaded]].tolist()
    low, high = _offset_bounds(sent, whole)
    low_loaded, high_loaded = _offset_bounds(subset, era)
    mine = acked[loaded]
    assert low_loaded[mine].tolist() == low[loaded][mine].tolist()
    assert high_loaded[mine].tolist() == high[loaded][mine].tolist()
    for k, recreation in enumerate(made):
        partition = sent.partition.to_numpy()
        read_to = np.array([recreation.read_to.get(p, np.iinfo(np.int64).max) for p in partition])
        unread = np.flatnonzero(acked & (whole == k) & (low >= read_to))
        assert np.isin(unread, loaded).all(), k
