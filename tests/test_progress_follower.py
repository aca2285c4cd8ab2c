"""What the runner reads from a streamlet's progress file while it runs (harness/evidence/progress.py)."""

from __future__ import annotations

import json

from harness.evidence.progress import ProgressFollower


class Progress:
    """A progress file as a driver's listener writes it, and the follower reading it."""

    def __init__(self, path):
        self.path = path
        self.follower = ProgressFollower(path)

    def add(self, *events: dict) -> ProgressFollower:
        with self.path.open("a") as fh:
            fh.writelines(json.dumps(e) + "\n" for e in events)
        return self.follower.poll()


def _progress(query: str, offset: int, state_operators: list) -> dict:
    source = {"endOffset": json.dumps({"in": {"0": offset}})}
    progress = {"numInputRows": 1, "sources": [source], "stateOperators": state_operators}
    return {"event": "progress", "query": query, "pid": 7, "progress": progress}


def test_a_streamlet_is_stateless_once_every_query_ran_a_batch_without_state_operators(tmp_path):
    progress = Progress(tmp_path / "progress.jsonl")
    follower, add = progress.follower, progress.add
    assert not follower.stateless()  # no query yet
    add({"event": "started", "query": "a"}, {"event": "started", "query": "b"}, _progress("a", 5, []))
    assert not follower.stateless()  # b has not run a batch: not known yet
    assert add(_progress("b", 5, [])).stateless()
    assert follower.lag({("in", 0): 5}) == 0
    assert not add(_progress("b", 9, [{"numRowsTotal": 3}])).stateless()  # a windowed count's state


def test_a_drivers_queries_have_ended_once_each_it_started_reported_its_end(tmp_path):
    progress = Progress(tmp_path / "progress.jsonl")
    follower, add = progress.follower, progress.add
    assert not follower.queries_ended(7)  # it started none yet
    add(*({"event": "started", "query": q, "pid": 7, "run_id": f"r-{q}"} for q in ("a", "b")))
    add({"event": "terminated", "pid": 7, "run_id": "r-a", "exception": None})
    assert not follower.queries_ended(7)
    # the driver before it, gracefully stopped, ended its own run of b: not this driver's
    add({"event": "terminated", "pid": 6, "run_id": "r-old", "exception": None})
    assert not follower.queries_ended(7)
    assert add({"event": "terminated", "pid": 7, "run_id": "r-b", "exception": None}).queries_ended(7)
    assert follower.failures == []
