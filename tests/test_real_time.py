"""A team's job in Spark's Real-time Mode (examples/realtime-kafka: plain PySpark, `trigger(realTime=...)`, a
5-second checkpoint interval), unchanged, SIGKILLed twice on a real broker: each restart emits again what the
killed driver had emitted since its last checkpoint, and the report's replay of each kill equals a count made here
from the recorded output topic, the job's checkpoint and acks.csv alone."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from harness.checker.check import check_run
from harness.checker.counts import COUNTS, VERDICT
from harness.runner.console import Console
from harness.runner.run import run_scenario
from harness.scenario import load_scenario
from tests.evidence_helpers import read_acks, why
from tests.test_faults import ROOT, history

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]
EXAMPLE = ROOT / "examples" / "realtime-kafka" / "scenario.yaml"
INTERVAL_MS = 5000  # the example's checkpoint interval


@pytest.fixture(scope="module")
def real_time_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("real-time") / "run"
    summary = run_scenario(load_scenario(EXAMPLE), run_dir, console=Console(quiet=True))
    assert summary.status == "complete" and not summary.failed_streamlets, why(summary)
    return run_dir, history(run_dir), check_run(run_dir)


def _output(run_dir: Path) -> pd.DataFrame:
    """Every copy on the output topic: when it was written (the producer's timestamp) and its payment_id."""
    rows = [json.loads(line) for line in (run_dir / "topics" / "payments-screened.jsonl").read_text().splitlines()]
    return pd.DataFrame({"ms": [r["timestamp_ms"] for r in rows], "id": [r["value"]["payment_id"] for r in rows]})


def _commits(run_dir: Path) -> list[tuple[int, dict[int, int]]]:
    """(when commits/N was written, the end offsets per source partition of batch N) per committed batch."""
    query = run_dir / "checkpoints" / "screen" / "main"
    found = []
    for commit in sorted((query / "commits").glob("[0-9]*"), key=lambda p: int(p.name)):
        ends = json.loads((query / "offsets" / commit.name).read_text().splitlines()[-1])["payments"]
        found.append((commit.stat().st_mtime_ns // 1_000_000, {int(p): int(o) for p, o in ends.items()}))
    return found


def test_each_kills_replay_is_what_the_driver_emitted_since_its_last_checkpoint(real_time_run):
    run_dir, events, report = real_time_run
    assert report[VERDICT] == "at-least-once" and report[COUNTS].lost == 0 and report.outcome == "pass"
    kills = [e for e in events if e["event"] == "fault_begun" and e["kind"] == "kill-driver"]
    restarts = [e["ts_ms"] for e in events if e["event"] == "process_started" and e.get("streamlet") == "screen"][1:]
    assert len(kills) == len(restarts) == 2 and kills[0]["at"] == "in-flight"
    output, commits = _output(run_dir), _commits(run_dir)
    acks = read_acks(run_dir)
    acks = acks[acks.status == "acked"]
    placed = {f"{k}-{s}": (int(p), int(o)) for k, s, p, o in zip(acks.key, acks.seq, acks.partition, acks.offset)}
    rows = {row[0]: row for row in report.sections["replay"].rows}
    for i, (kill, restart) in enumerate(zip(kills, restarts)):
        until = kills[i + 1]["ts_ms"] if i + 1 < len(kills) else output.ms.max() + 1
        committed_ms, ends = max(c for c in commits if c[0] <= kill["ts_ms"])
        # Written before the restart: by the killed driver, an in-flight write landing just after the kill's moment too.
        before = output[output.ms < restart]
        # What the restarted driver wrote again (until it was killed in turn): the report's count for this kill.
        after = output[(output.ms >= restart) & (output.ms < until)]
        replayed = after[after.id.isin(set(before.id))]
        row = rows[kill["fault"]]
        assert row[2] == "real-time" and row[4] == len(replayed)
        assert row[3] == round((kill["ts_ms"] - committed_ms) / 1000, 3)
        # From the checkpoint: what was written again is what had been written past the last commit's offsets,
        # and all of that was written again after the restart (by it, or by a later one when it was killed before
        # its first checkpoint).
        since = {r for r in set(before.id) if r in placed and placed[r][1] >= ends.get(placed[r][0], 0)}
        assert set(replayed.id) <= since <= set(output[output.ms >= restart].id), i
        # Up by its first output or its first batch, whichever came first: on a loaded machine the restarted query's
        # first batch may end empty before it wrote anything; otherwise its output comes an interval before it.
        ended = next(e["ts_ms"] for e in events if e["event"] == "fault_ended" and e["ts_ms"] > kill["ts_ms"])
        first_output = output[(output.ms >= restart)].ms.min()
        first_commit = min((c[0] for c in commits if c[0] > restart), default=float("inf"))
        assert min(first_output, first_commit) <= ended
        if first_commit - first_output > INTERVAL_MS / 2:
            assert ended < first_commit
    assert sum(rows[k["fault"]][4] for k in kills) > 0
    # The in-flight kill struck with output written since the last checkpoint (the batch it names began then), all
    # of which came again.
    first = kills[0]
    assert first["planned_ms"] == max(c[0] for c in commits if c[0] <= first["ts_ms"])
    written = output.ms[output.ms <= first["ts_ms"]]
    assert (written > first["planned_ms"]).any()
