"""The console output kind (harness/outputs/kinds/console_output.py): what a job's console sink printed, read from
its driver's log between the logger's lines and a progress bar, a table a kill cut kept as far as it was printed; a
batch shown in part or an identity cut short refused; a console output whose job sets no numRows refused when the
scenario is read. The real run: examples/console under two kills, every count equal to one made here from the
log with a pattern of its own."""

from __future__ import annotations

import csv
import re
from collections import Counter

import pytest
import yaml

from harness.checker.counts import COUNTS, VERDICT
from harness.checker.expect import EXPECTATIONS
from harness.outputs.kinds.console_output import _cut, printed
from harness.scenario.fields import BlueprintError
from harness.scenario.parse import parse_scenario
from tests.evidence_helpers import run_example
from tests.test_faults import ROOT

EXAMPLE = ROOT / "examples" / "console"
TABLE = "+--------+------+\n|order_id|amount|\n+--------+------+\n"
LOG = (
    "26/12/02 07:26:45 WARN NativeCodeLoader: Unable to load native-hadoop library\n"
    "-------------------------------------------\nBatch: 0\n-------------------------------------------\n"
    + TABLE
    + "+--------+------+\n\n"
    "[Stage 1:>                (0 + 1) / 1]\r                \rBatch: 1\n-------------------------------------------\n"
    + TABLE
    + "|k0001-0 |5.0   |\n26/12/02 07:26:52 WARN ProcessingTimeExecutor: Current batch is falling behind.\n"
    "|k0002-0 |null  |\n+--------+------+\n\n"
    "Batch: 2\n-------------------------------------------\n" + TABLE + "|k0001-1 |6.0   |\n|k0003"  # killed here
    "\nWARNING: Using incubator modules: jdk.incubator.vector\n"
    "Batch: 2\n-------------------------------------------\n" + TABLE + "|k0001-1 |6.0   |\n+--------+------+\n"
)


def test_the_rows_printed_are_read_with_their_batches_between_the_drivers_other_lines():
    rows, cut = printed(LOG)
    assert cut is None
    assert [(batch, row["order_id"]) for batch, row in rows] == [
        (1, "k0001-0"),
        (1, "k0002-0"),
        (2, "k0001-1"),
        (2, "k0001-1"),  # the replay after the kill printed it again; the cut line "|k0003" is no row
    ]
    assert rows[1][1]["amount"] is None and rows[0][1]["amount"] == "5.0"


def test_a_batch_shown_in_part_or_an_identity_cut_short_cannot_be_judged():
    _, cut = printed(LOG + "Batch: 3\n" + TABLE + "|k0004-0 |1.0   |\n+--------+------+\nonly showing top 1 row\n")
    assert cut == "batch 3 was shown in part (only showing top 1 row): give the console sink a larger numRows"
    assert _cut(("k0001-order-numbe...",)) and not _cut(("k0001-order-number-1", 5))


def test_a_console_output_whose_job_sets_no_num_rows_is_refused_in_one_line(tmp_path):
    (tmp_path / "job.py").write_text((EXAMPLE / "job.py").read_text().replace('.option("numRows", 10000)', ""))
    raw = yaml.safe_load((EXAMPLE / "scenario.yaml").read_text())
    with pytest.raises(BlueprintError) as refused:
        parse_scenario(raw, tmp_path)
    assert str(refused.value).startswith("outputs.printed: its job's console sink prints 20 rows a batch unless told")
    parse_scenario(raw, EXAMPLE)  # the example sets it


@pytest.mark.e2e
@pytest.mark.long  # make test-long: the console kind's reading is tested above; this runs it under kills
@pytest.mark.timeout(900)
def test_a_console_job_under_kills_prints_its_replayed_batches_again(tmp_path):
    run_dir = tmp_path / "run"
    report = run_example(EXAMPLE, "scenario.yaml", run_dir)
    assert report[VERDICT] == "at-least-once" and report.outcome == "pass", report[EXPECTATIONS]
    log = (run_dir / "logs" / "streamlet-orders.log").read_text(errors="replace")
    shown = Counter(re.findall(r"^\|(k\d{4}-\d+|canary-0)\s*\|", log, re.M))
    with open(run_dir / "acks.csv") as fh:
        sent = {f"{r['key']}-{r['seq']}" for r in csv.DictReader(fh) if r["status"] == "acked"}
    assert report[COUNTS].lost == len(sent - set(shown)) == 0
    assert report[COUNTS].duplicated_deliveries == sum(1 for i, n in shown.items() if n > 1 and i in sent) > 0
    assert report[COUNTS].phantom == len(set(shown) - sent) == 0
