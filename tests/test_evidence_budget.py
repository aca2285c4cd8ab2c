"""The evidence budget's watch on a real run directory: when it ends the workload, counting what the backlog adds."""

import json
import os

from harness.evidence.history import BUDGET_REACHED, History
from harness.evidence.layout import RunLayout
from harness.runner.evidence_budget import Backlog, EvidenceBudget, Reader, pipeline_backlog, upstream_lags

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


CAUGHT_UP = Backlog(Reader(100, 0), Reader(100, 0))
# source -> ingress -> a -> processor -> b -> egress, the recorder following a and b
CHAIN = {"ingress": (["source"], ["a"]), "processor": (["a"], ["b"]), "egress": (["b"], [])}


def test_each_reader_adds_its_bytes_per_record_read_for_each_record_still_to_reach_it():
    reader = Reader(read=1000, to_read=250)
    assert reader.bytes_to_come(reader.cost(40 * MB)) == 10 * MB
    assert Reader(read=0, to_read=500).cost(0) is None  # nothing read yet: nothing to go by
    assert Backlog(Reader(500, 500), Reader(250, 750)).bytes_to_come(5 * MB, 2 * MB) == 5 * MB + 6 * MB


def test_a_reader_that_has_read_nothing_yet_is_taken_to_cost_what_the_other_costs_a_record():
    # the egress's query not started: its 1,000 records to come at the recorder's 10 kB a record
    assert Backlog(Reader(500, 100), Reader(0, 1000)).bytes_to_come(5 * MB, 0) == 1 * MB + 10 * MB
    assert Backlog(Reader(0, 100), Reader(200, 50)).bytes_to_come(0, 4 * MB) == 2 * MB + 1 * MB
    assert Backlog(Reader(0, 100), Reader(0, 100)).bytes_to_come(0, 0) == 0  # neither: the next look knows


def test_a_record_not_through_a_streamlet_is_still_to_reach_every_reader_downstream_of_it():
    assert upstream_lags(CHAIN, {"ingress": 30, "processor": 20, "egress": 10}) == {
        "ingress": 30,
        "processor": 50,
        "egress": 60,
    }
    fan = {"ingress": (["source"], ["a"]), "left": (["a"], []), "right": (["a"], [])}
    assert upstream_lags(fan, {"ingress": 5, "left": 1, "right": 2}) == {"ingress": 5, "left": 6, "right": 7}


def test_a_pipelines_backlog_counts_what_the_recorder_and_the_egresses_have_read_and_have_still_to_read():
    ends = {("source", 0): 600, ("source", 1): 400, ("a", 0): 900, ("b", 0): 700}
    # the ingress 100 behind, the processor 200, the egress 300: it has read 400 of b's 700
    backlog = pipeline_backlog(CHAIN, {"ingress": 100, "processor": 200, "egress": 300}, ends, (["a", "b"], 1500, 50))
    # the recorder: 50 behind, and every record not through the ingress (for a) or the processor (for b)
    assert backlog.recorder == Reader(1500, 50 + 100 + 300)
    assert backlog.egresses == Reader(400, 600)
    # a query not started yet: all of its inputs are still to read
    waiting = pipeline_backlog(CHAIN, {"ingress": 100, "processor": 200, "egress": None}, ends, (["a", "b"], 0, 0))
    assert waiting.egresses == Reader(0, 1000)


def test_a_pipeline_caught_up_runs_until_its_evidence_reaches_the_mark(tmp_path):
    layout, budget, ended = watch(tmp_path, CAUGHT_UP)
    write(layout.root / "topics" / "in.jsonl", 4)
    budget.sample()
    assert ended == [] and budget.why is None
    write(layout.root / "topics" / "in.jsonl", 6.5)  # 2.5 MB more: the next look would pass 90%
    budget.sample()
    assert len(ended) == 1 and "would pass 90% before the next look" in ended[0]
    assert "in flight" not in ended[0]
    budget.sample()  # once
    assert len(ended) == 1 and len(reached(layout)) == 1


def test_a_lagging_pipeline_ends_the_workload_before_its_evidence_reaches_the_mark(tmp_path):
    # 2 MB recorded of 500 records, 500 more to record; 2 MB stored of 250, 750 more to store: 8 MB to come.
    # (At the evidence's bytes per record acknowledged, 1,000 of them, it would have expected 4 MB.)
    layout, budget, ended = watch(tmp_path, Backlog(Reader(500, 500), Reader(250, 750)), budget_mb=13)
    write(layout.root / "topics" / "in.jsonl", 2)
    write(layout.root / "egress" / "egress.sqlite", 2)
    write(layout.root / "acks.csv", 0.1)  # whole as soon as the records are sent: none of it is to come
    budget.sample()
    assert len(ended) == 1 and "the records in flight will add about 8.0 MB" in ended[0]
    (event,) = reached(layout)
    # as the disk holds them (whole blocks), the history among the egresses' evidence
    assert 4 * MB <= event["evidence_bytes"] < 4.2 * MB and 8 * MB <= event["backlog_bytes"] < 8.1 * MB


def test_a_readers_cost_that_dips_is_taken_at_the_highest_seen(tmp_path):
    # 2 MB recorded of 500 records (4 kB each); later 2.2 MB of 1,000 (its last records not on disk yet): the
    # 1,500 still to record are taken at 4 kB, not 2.2 kB.
    readers = {"backlog": Backlog(Reader(500, 1000), Reader(500, 0))}
    layout = RunLayout(tmp_path / "run")
    (layout.root / "topics").mkdir(parents=True)
    ended: list[str] = []
    budget = EvidenceBudget(layout, 10 * MB, History(layout.history), ended.append, lambda: readers["backlog"])
    write(layout.root / "topics" / "in.jsonl", 2)
    budget.sample()
    assert ended == []
    readers["backlog"] = Backlog(Reader(1000, 1500), Reader(500, 0))
    write(layout.root / "topics" / "in.jsonl", 2.2)
    budget.sample()
    (event,) = reached(layout)  # 2.2 MB and 6 MB to come pass 9 MB (at the dipped cost: 3.3 MB, 5.5 MB in all)
    assert 6 * MB <= event["backlog_bytes"] < 6.1 * MB, event
