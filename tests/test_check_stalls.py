"""The stalls check (harness/checker/checks/stalls.py) and its expectation, max_stall_s, on a recorded run (the
frozen chain, whose enrich and score drivers were killed): the longest each streamlet had records waiting and read
none, as counted here from the offset samples and its batches; a limit below it fails naming the streamlet, one
above passes, and a run without samples is unknown."""

from __future__ import annotations

import json

from harness.checker.check import check_run
from harness.checker.expect import EXPECTATIONS
from tests.evidence_helpers import FROZEN_CHAIN
from tests.test_check_lag import _run, behind, progress_events


def _longest_stall_s(streamlet: str) -> float:
    """Over the samples with records waiting: the time since the later of the last batch that read a row and the
    sample at which the waiting began; the longest."""
    reads = [e["ts_ms"] for e in progress_events(FROZEN_CHAIN, streamlet) if e["progress"]["numInputRows"] > 0]
    longest, began = 0, None
    for ts, waiting in behind(FROZEN_CHAIN, streamlet):
        began = None if waiting == 0 else (ts if began is None else began)
        if began is not None:
            longest = max(longest, ts - max([began, *(r for r in reads if r <= ts)]))
    return longest / 1000


def test_the_longest_stall_of_each_streamlet_and_its_limit(tmp_path):
    first = _run(tmp_path, 10**9)
    stalls = {row[0]: row[1] for row in check_run(first).sections["stalls"].rows}
    for name, seconds in stalls.items():
        assert abs(seconds - _longest_stall_s(name)) <= 0.15, (name, seconds, _longest_stall_s(name))
    assert stalls["enrich"] > 5 and stalls["score"] > 5  # their drivers were killed with records waiting
    pipeline = json.loads((first / "pipeline.json").read_text())
    (first / "pipeline.json").write_text(json.dumps(pipeline | {"expectations": {"max_stall_s": max(stalls.values())}}))
    assert check_run(first)[EXPECTATIONS][0].status == "pass"
    run = _run(tmp_path, 1)
    (run / "pipeline.json").write_text(json.dumps(pipeline | {"expectations": {"max_stall_s": 10.0}}))
    [failed] = check_run(run)[EXPECTATIONS]
    over = sorted(name for name, s in stalls.items() if s > 10)
    assert failed.status == "fail" and all(f"{name} {stalls[name]:g}s" in failed.detail for name in over)
    run = _run(tmp_path, 2, samples=False)
    (run / "pipeline.json").write_text(json.dumps(pipeline | {"expectations": {"max_stall_s": 1000.0}}))
    assert check_run(run)[EXPECTATIONS][0].status == "unknown"
