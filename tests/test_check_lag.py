"""The consumer lag check (harness/checker/checks/lag.py) and its expectation, max_lag, on a recorded run (the
frozen chain: four streamlets, the runner's offset samples in its history): the most records each fell behind, as
counted here from the samples and the streamlets' commits; a limit below the worst fails naming who fell behind,
one above passes, and a run without samples is unknown, never a pass."""

from __future__ import annotations

import json
from pathlib import Path

from harness.checker.check import check_run
from harness.checker.expect import EXPECTATIONS
from harness.report.write import write_reports
from tests.evidence_helpers import FROZEN_CHAIN, chain_copy


def _run(tmp_path: Path, max_lag: int, samples: bool = True) -> Path:
    return chain_copy(tmp_path, {"max_lag": max_lag}, None if samples else "offsets")


def behind(run: Path, streamlet: str) -> list[tuple[int, int]]:
    """From the raw files, at each offset sample ([topic, partition, log start, log end] rows): (when, log end minus
    the end offset the streamlet's last finished batch had read to, else the log start, summed over its input
    partitions)."""
    inputs = next(
        s["inputs"] for s in json.loads((run / "pipeline.json").read_text())["streamlets"] if s["name"] == streamlet
    )
    events = [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines()]
    read = []  # (when, topic, partition, end offset)
    for p in progress_events(run, streamlet):
        for source in p["progress"].get("sources", []):
            ends = source.get("endOffset") or {}
            for topic, parts in (json.loads(ends) if isinstance(ends, str) else ends).items():
                read += [(p["ts_ms"], topic, int(part), int(end)) for part, end in parts.items()]
    found = []
    for sample in (e for e in events if e["event"] == "offsets"):
        total = 0
        for topic, partition, log_start, log_end in sample["partitions"]:
            if topic in inputs:
                done = [
                    end
                    for ts, t, part, end in sorted(read)
                    if ts <= sample["ts_ms"] and (t, part) == (topic, partition)
                ]
                total += max(log_end - (done[-1] if done else log_start), 0)
        found.append((sample["ts_ms"], total))
    return found


def progress_events(run: Path, streamlet: str) -> list[dict]:
    lines = (run / "progress" / f"{streamlet}.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["event"] == "progress"]


def test_the_lag_each_streamlet_fell_behind_and_its_limit(tmp_path):
    run = _run(tmp_path, 500)
    report = check_run(run)
    section = report.sections["lag"]
    most = {row[0]: row[2] for row in section.rows}
    assert most == {name: max(n for _, n in behind(FROZEN_CHAIN, name)) for name in most}
    [failed] = report[EXPECTATIONS]
    over = sorted(name for name, n in most.items() if n > 500)
    assert failed.status == "fail" and over and all(f"{name} {most[name]:,} records" in failed.detail for name in over)
    [passed] = check_run(_run(tmp_path, max(most.values())))[EXPECTATIONS]
    assert passed.status == "pass" and passed.actual == max(most.values())
    unsampled = check_run(_run(tmp_path, 10**9, samples=False))
    assert unsampled[EXPECTATIONS][0].status == "unknown" and unsampled.outcome == "unknown"
    write_reports(report, run)
    assert "## Consumer lag" in (run / "report.md").read_text() and "Consumer lag" in (run / "report.html").read_text()
    saved = json.loads((run / "report.json").read_text())["sections"]["lag"]
    assert (
        saved["data"] == {"most_behind": most}
        and "data" not in json.loads((run / "report.json").read_text())["sections"]["drivers"]
    )
