"""What the runner reads from a streamlet's progress file while it runs (harness/evidence/progress.py)."""

from __future__ import annotations

import json

from harness.evidence.progress import ProgressFollower


def _progress(query: str, offset: int, state_operators: list) -> dict:
    source = {"endOffset": json.dumps({"in": {"0": offset}})}
    progress = {"numInputRows": 1, "sources": [source], "stateOperators": state_operators}
    return {"event": "progress", "query": query, "pid": 7, "progress": progress}


def test_a_streamlet_is_stateless_once_every_query_ran_a_batch_without_state_operators(tmp_path):
    path = tmp_path / "progress.jsonl"
    follower = ProgressFollower(path)

    def add(*events: dict) -> ProgressFollower:
        with path.open("a") as fh:
            fh.writelines(json.dumps(e) + "\n" for e in events)
        return follower.poll()

    assert not follower.stateless()  # no query yet
    add({"event": "started", "query": "a"}, {"event": "started", "query": "b"}, _progress("a", 5, []))
    assert not follower.stateless()  # b has not run a batch: not known yet
    assert add(_progress("b", 5, [])).stateless()
    assert follower.lag({("in", 0): 5}) == 0
    assert not add(_progress("b", 9, [{"numRowsTotal": 3}])).stateless()  # a windowed count's state
