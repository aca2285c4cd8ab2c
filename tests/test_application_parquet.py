"""A team's own job counting Avro orders per account and window into a Parquet table partitioned by account
(examples/orders-lake/windows.py, unchanged), under SIGKILLs: reconciled window by window, the partitioned table
read whole, its late records explained by the watermark. Counts equal a count made here from the files, the
`_spark_metadata` log and acks.csv (helpers of tests/test_application_files.py: this test's own readers)."""

from __future__ import annotations

import pandas as pd
import pyarrow.dataset as ds
import pytest

from harness.checker.counts import CAUSES, COUNTS, VERDICT, WINDOWS
from harness.checker.expect import EXPECTATIONS
from tests.test_application_files import _run, _sink_state
from tests.test_faults import history

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]


def test_a_windowed_count_in_parquet_matches_each_window_and_its_late_orders_are_explained(tmp_path):
    # The example's first kill alone, with a batch in flight (its windows in the table, not in its checkpoint): its
    # second, a plain kill, adds a restart's minute on a busy machine and nothing the windows' count does not show.
    run_dir, report = _run(tmp_path, "windows", faults=1)
    table = run_dir / "work" / "windows" / "table"
    assert {p.name for p in table.iterdir() if p.is_dir()} >= {"account=k0000", "_spark_metadata"}
    files = [str(table / f) for f in _sink_state(table)]
    rows = ds.dataset(files, format="parquet", partitioning="hive", partition_base_dir=str(table)).to_table()
    rows = rows.to_pandas()
    counted = (
        rows.assign(start=rows.window_start.astype("datetime64[ms]").astype("int64"))
        .groupby(["account", "start"])
        .orders.sum()
    )
    acks = pd.read_csv(run_dir / "acks.csv")
    acks = acks[(acks.status == "acked") & (acks.key != "closing")]
    sent = acks.assign(start=acks.event_time_ms // 10_000 * 10_000).groupby(["key", "start"])
    expected, late = sent.size(), sent.late.sum()
    dropped = expected - counted.reindex(expected.index, fill_value=0)
    # A window (the last ones too: the closing record closed them) is short only of late orders, a minute behind and
    # so past the watermark once it formed (a batch read before it formed, a slow start's backlog, still counts
    # them); none is over.
    assert ((dropped >= 0) & (dropped <= late)).all() and set(counted.index) <= set(expected.index)
    assert late.sum() > 0 and report[WINDOWS].records_dropped_by_watermark == dropped.sum()
    assert report[WINDOWS].exact == report[WINDOWS].windows == len(expected) and report[WINDOWS].over_counted == 0
    assert report[COUNTS].lost == report[CAUSES]["lost"]["watermark"] == dropped.sum()
    assert report[WINDOWS].spark_rows_dropped_by_watermark is None  # an application's progress is its checkpoint's
    assert any(e["event"] == "windows_closed" for e in history(run_dir))
    # the scenario expects late orders dropped (at-most-once): a run that counted every one fails it, as it should
    expected_verdict, outcome = ("at-most-once", "pass") if dropped.sum() else ("exactly-once", "fail")
    assert (report[VERDICT], report.outcome) == (expected_verdict, outcome), report[EXPECTATIONS]
