"""The report's charts (harness/report/plots.py): one with nothing to draw is left out of report.html, and one drawn
again is drawn alike."""

from __future__ import annotations

import re

import numpy as np

from harness.checker.check import check_run
from harness.report.html import render_html
from tests.synthetic_run import Flow, clean_flow, make_sent, write_run

ANOMALIES = "Where in the pipeline's time records were lost and copies made"


def test_a_chart_with_nothing_to_draw_is_left_out_and_one_with_copies_is_drawn(tmp_path):
    sent = make_sent(3, 20)
    clean = render_html(check_run(write_run(tmp_path / "clean", sent, clean_flow(sent))))
    assert clean.count("<svg") == 1 and ANOMALIES not in clean  # the timeline alone: nothing lost, no copies
    every = np.arange(len(sent))
    twice = np.concatenate([every, every[:5]])  # the processor replayed five records
    copied = render_html(
        check_run(write_run(tmp_path / "copied", sent, Flow({"ingested": every, "processed": twice}, twice, every)))
    )
    assert copied.count("<svg") == 2 and ANOMALIES in copied
    redrawn = render_html(check_run(tmp_path / "copied"))
    assert redrawn == copied  # a report drawn again is the same page: no date, no random ids in its plots


def test_a_report_written_without_its_plots_says_how_to_draw_them_and_differs_by_nothing_else(tmp_path):
    """A search's runs (harness explore) are written without plots; `harness report` draws them."""
    sent = make_sent(3, 20)
    every = np.arange(len(sent))
    twice = np.concatenate([every, every[:5]])
    run_dir = write_run(tmp_path / "copied", sent, Flow({"ingested": every, "processed": twice}, twice, every))
    report = check_run(run_dir)
    drawn, deferred = render_html(report), render_html(report, plots=False)
    assert "<svg" not in deferred and f"<code>harness report {run_dir}</code> draws them" in deferred
    notice = next(line for line in deferred.splitlines() if "Plots not drawn" in line)
    assert deferred.replace(notice + "\n", "") == re.sub(r"<svg.*?</svg>\n?", "", drawn, flags=re.S)
