"""The window counts of a keyed windowed aggregation judged on synthetic evidence (tests/synthetic_windows.py),
against what the evidence was made with: late records dropped behind the watermark are missing and explained by
it, copies a replay counted again over-count their windows, and windows the watermark had not passed are open."""

from __future__ import annotations

import json

import numpy as np

from harness.checker.check import check_run
from harness.checker.counts import CAUSES, COUNTS, VERDICT, WINDOWS
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
    windows = report[WINDOWS]
    assert windows.records_missing == windows.records_dropped_by_watermark == len(dropped)
    assert report[COUNTS].lost == report[CAUSES]["lost"]["watermark"] == len(dropped)
    assert windows.under_counted == windows.over_counted == windows.phantom == 0
    starts = sent.event_time_ms // WINDOW_MS * WINDOW_MS
    open_ = {(k, s) for k, s in zip(sent.key, starts) if s + WINDOW_MS > made.final_watermark_ms}
    assert windows.still_open == len(open_) > 0
    assert windows.windows == len({(k, s) for k, s in zip(sent.key, starts)}) - len(open_)
    assert report[VERDICT] == "at-most-once"


def test_copies_a_replay_counted_again_over_count_their_windows(tmp_path):
    sent = _sent()
    every = np.arange(len(sent))
    again = np.arange(100, 130)  # a batch the ingress wrote twice
    made = write_windowed_run(tmp_path / "run", sent, np.insert(every, 130, again), counter_rows=100)
    report = check_run(tmp_path / "run", strict=True)
    starts = sent.event_time_ms // WINDOW_MS * WINDOW_MS
    due = starts[again] + WINDOW_MS <= made.final_watermark_ms
    windows = report[WINDOWS]
    assert not made.dropped.any() and due.all()
    assert windows.records_over_counted == report[COUNTS].duplicated_in_state == len(again)
    assert windows.over_counted == len({(sent.key[i], starts[i]) for i in again})
    assert windows.records_missing == windows.under_counted == 0
    assert report[VERDICT] == "at-least-once"


def _tamper(root, sql: list[str]) -> None:
    """The window egress's store changed by hand (sqlite3): what a faulty counter or egress would leave."""
    import sqlite3

    with sqlite3.connect(root / "egress" / "egress.sqlite") as conn:
        for statement in sql:
            conn.execute(statement)


def _same_reports(root) -> dict:
    """The default engine's report (the cells judged where the records are: dense) is numpy's; returns it."""
    by_numpy = check_run(root, engine=None, strict=True).to_dict()
    by_default = check_run(root, strict=True).to_dict()
    assert by_default == by_numpy
    return by_default


def test_the_dense_engine_judges_every_window_anomaly_as_numpy_does(tmp_path):
    """Every anomaly class of windows at once, and the cells outside the dense grid (a key never sent, a record whose
    time is not known, a window not on the grid's step), in tumbling and then sliding windows."""
    sent = _sent()
    late = np.arange(300, len(sent), 97)
    sent.late[late] = True
    sent.event_time_ms[late] -= 60_000
    sent.acked[[5, 77, 410]] = False
    sent.event_time_ms[[9, 11]] = 0  # no time known: a window of 1970
    every = np.arange(len(sent))
    again = np.arange(100, 130)
    root = tmp_path / "run"
    write_windowed_run(root, sent, np.insert(every, 130, again), counter_rows=100)
    phantoms = [("k9999", T0, 4, 1), ("k0001", T0 + 5, 1, 1), ("k0002", T0 - WINDOW_MS * 50, 1, 1)]
    _tamper(
        root,
        [
            "UPDATE windows SET count = count - 2 WHERE rowid IN (3, 40)",  # under-counted beyond the watermark
            "UPDATE windows SET count = count + 1 WHERE rowid = 41",  # over-counted
            "DELETE FROM windows WHERE rowid = 50",  # a window due and never stored
            # phantoms: a key never sent, a window off the step, one long before any record
            *(f"INSERT INTO windows (key, window_start_ms, count, batch_id) VALUES {row}" for row in phantoms),
            "INSERT INTO window_audit SELECT * FROM window_audit WHERE rowid IN (7, 8)",  # delivered twice
        ],
    )
    report = _same_reports(root)
    windows = report["windows"]
    assert windows["under_counted"] >= 2 and windows["over_counted"] > 1 and windows["phantom"] == 3
    assert windows["records_dropped_by_watermark"] > 0 and report["counts"]["duplicated_deliveries"] == 2
    assert {w["anomaly"] for w in report["witnesses"]} >= {
        "window_under_counted",
        "window_over_counted",
        "window_phantom",
    }

    description = json.loads((root / "pipeline.json").read_text())
    counter = next(s for s in description["streamlets"] if s.get("window"))
    counter["window_slide"] = f"{WINDOW_MS // 2000} seconds"  # every record in two windows, each late alone or both
    (root / "pipeline.json").write_text(json.dumps(description))
    sliding = _same_reports(root)["windows"]
    assert sliding["windows"] > windows["windows"] and sliding["records_dropped_by_watermark"] > 0
