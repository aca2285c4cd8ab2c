"""The evidence budget's watch on a real run directory: when it ends the workload, counting what the backlog adds."""

import json
import os

from harness.evidence.history import BUDGET_REACHED, History
from harness.evidence.layout import RunLayout
from harness.runner.evidence_budget import Backlog, EvidenceBudget

MB = 10**6


def watch(tmp_path, backlog: Backlog, budget_mb: int = 10):
    layout = RunLayout(tmp_path / "run")
    (layout.root / "topics").mkdir(parents=True)
    history = History(layout.history)
    ended: list[str] = []
    budget = EvidenceBudget(layout, budget_mb * MB, history, ended.append, lambda: backlog)
    return layout, budget, ended


def write(path, mb: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.write(os.urandom(int(mb * MB)))  # random: no file system compresses it away


def reached(layout: RunLayout) -> list[dict]:
    events = [json.loads(line) for line in layout.history.read_text().splitlines()]
    return [e for e in events if e["event"] == BUDGET_REACHED]


def test_the_backlog_adds_the_evidence_per_acknowledged_record_for_each_record_still_to_process():
    assert Backlog(acked=1000, unprocessed=250).bytes_to_come(40 * MB) == 10 * MB
    assert Backlog(acked=0, unprocessed=0).bytes_to_come(5 * MB) == 0


def test_a_pipeline_caught_up_runs_until_its_evidence_reaches_the_mark(tmp_path):
    layout, budget, ended = watch(tmp_path, Backlog(acked=100, unprocessed=0))
    write(layout.root / "topics" / "in.jsonl", 4)
    budget.sample()
    assert ended == [] and budget.why is None
    write(layout.root / "topics" / "in.jsonl", 6.5)  # 2.5 MB more: the next look would pass 90%
    budget.sample()
    assert len(ended) == 1 and "would pass 90% before the next look" in ended[0]
    assert "in flight" not in ended[0]
    budget.sample()  # once
    assert len(ended) == 1 and len(reached(layout)) == 1


def test_a_lagging_pipeline_ends_the_workload_before_its_recordings_alone_reach_the_mark(tmp_path):
    # 5 MB recorded as sent, the pipeline half way through: the drain will store about 2.5 MB more at the egress
    # (at 5 MB per 1,000 acknowledged, for 500 records), and the recordings of what is sent before the drain
    layout, budget, ended = watch(tmp_path, Backlog(acked=1000, unprocessed=500), budget_mb=8)
    write(layout.root / "topics" / "in.jsonl", 5)
    budget.sample()
    assert len(ended) == 1 and "the records in flight will add about 2.5 MB" in ended[0]
    (event,) = reached(layout)
    assert event["evidence_bytes"] >= 5 * MB and event["backlog_bytes"] == event["evidence_bytes"] // 2
