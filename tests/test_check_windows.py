"""The window counts of a keyed windowed aggregation judged on synthetic evidence (tests/synthetic_windows.py),
against what the evidence was made with: late records dropped behind the watermark are missing and explained by
it, copies a replay counted again over-count their windows, and windows the watermark had not passed are open."""

from __future__ import annotations

import numpy as np

from harness.checker.check import check_run
from tests.synthetic_run import T0, make_sent
from tests.synthetic_windows import WINDOW_MS, write_windowed_run


def _sent(keys: int = 20, per_key: int = 60):
    sent = make_sent(keys, per_key)
    sent.event_time_ms = T0 + np.arange(len(sent), dtype=np.int64) * 100  # ten a second: 120 s, 12 windows
    return sent


def test_late_records_are_missing_from_their_windows_and_explained_by_the_watermark(tmp_path):
    sent = _sent()
    late = np.arange(300, len(sent), 97)
    sent.late[late] = True
    sent.event_time_ms[late] -= 60_000
    made = write_windowed_run(tmp_path / "run", sent, np.arange(len(sent)), counter_rows=100)
    report = check_run(tmp_path / "run", strict=True)
    dropped = made.ingested[made.dropped]
    assert len(dropped) and set(dropped) <= set(late)  # late ones, and only once a watermark existed
    windows = report.windows
    assert windows.records_missing == windows.records_dropped_by_watermark == len(dropped)
    assert report.counts.lost == report.causes["lost"]["watermark"] == len(dropped)
    assert windows.under_counted == windows.over_counted == windows.phantom == 0
    starts = sent.event_time_ms // WINDOW_MS * WINDOW_MS
    open_ = {(k, s) for k, s in zip(sent.key, starts) if s + WINDOW_MS > made.final_watermark_ms}
    assert windows.still_open == len(open_) > 0
    assert windows.windows == len({(k, s) for k, s in zip(sent.key, starts)}) - len(open_)
    assert report.verdict == "at-most-once"


def test_copies_a_replay_counted_again_over_count_their_windows(tmp_path):
    sent = _sent()
    every = np.arange(len(sent))
    again = np.arange(100, 130)  # a batch the ingress wrote twice
    made = write_windowed_run(tmp_path / "run", sent, np.insert(every, 130, again), counter_rows=100)
    report = check_run(tmp_path / "run", strict=True)
    starts = sent.event_time_ms // WINDOW_MS * WINDOW_MS
    due = starts[again] + WINDOW_MS <= made.final_watermark_ms
    windows = report.windows
    assert not made.dropped.any() and due.all()
    assert windows.records_over_counted == report.counts.duplicated_in_state == len(again)
    assert windows.over_counted == len({(sent.key[i], starts[i]) for i in again})
    assert windows.records_missing == windows.under_counted == 0
    assert report.verdict == "at-least-once"
