"""Writing every report format of one run into its run directory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from harness.checker.anomaly_records import RECORDS
from harness.checker.check import check_run
from harness.checker.run_report import Report
from harness.checker.summary.engines import DEFAULT
from harness.checker.witnesses import seq_ranges
from harness.evidence.layout import RunLayout
from harness.files import write_atomically
from harness.process import live_recorded
from harness.report.html import render_html
from harness.report.junit import suite_element, write_junit
from harness.report.markdown import render_markdown
from harness.report.tables import anomaly_files

ANOMALY_DIR = "anomalies"


def write_record_sets(report: Report, run_dir: Path) -> dict[str, Path]:
    """The complete sets of lost, duplicated, phantom and reordered records as CSV (one row per record), and the lost
    records as ranges of consecutive seqs per key and cause: anomalies/<set>.csv, linked from the reports."""
    folder = Path(run_dir) / ANOMALY_DIR
    folder.mkdir(exist_ok=True)
    for old in folder.glob("*.csv"):
        old.unlink()
    tables = {name: table for name, table in report[RECORDS].items() if len(table)}
    if "lost" in tables:
        tables["lost-ranges"] = seq_ranges(tables["lost"], by="cause")
    files = anomaly_files(report)
    return {name: write_atomically(Path(run_dir) / files[name], tables[name].to_csv(index=False)) for name in tables}


def write_reports(report: Report, run_dir: Path, plots: bool = True) -> dict[str, Path]:
    """report.json, report.md, report.html (its plots drawn unless not `plots`) and junit.xml, each written whole
    (temp file + rename), and the record sets."""
    root = Path(run_dir)
    write_record_sets(report, root)
    paths = {
        "json": root / "report.json",
        "markdown": root / "report.md",
        "html": root / "report.html",
        "junit": root / "junit.xml",
    }
    texts = {
        "json": json.dumps(report.to_dict(), indent=2, default=str) + "\n",
        "markdown": render_markdown(report) + "\n",
        "html": render_html(report, plots),
    }
    for kind, text in texts.items():
        write_atomically(paths[kind], text)
    write_junit(paths["junit"], [suite_element(report)])
    return paths


def still_running(run_dir: Path) -> tuple[str, ...]:
    """Names of the run's processes (its pid files, the embedded cluster's too) that are alive: a run in progress."""
    layout = RunLayout(Path(run_dir))
    return tuple(r.name for r in live_recorded([layout.pids, layout.cluster / "pids"]))


def judge_run(run_dir: Path, engine: Callable | str | None = DEFAULT) -> Report:
    """The checker on a run directory, told which of the run's processes still live (`engine`: check_run's)."""
    return check_run(run_dir, running=still_running(run_dir), engine=engine)


def check_and_write(run_dir: Path, plots: bool = True) -> tuple[Report, dict[str, Path]]:
    """Judge a run directory and write its reports (`plots`: write_reports')."""
    report = judge_run(run_dir)
    return report, write_reports(report, run_dir, plots)
