"""Closing the windows of an application that counts by event-time window in append mode: Spark emits a window once
the watermark has passed its end, and the watermark moves only with newer records. So once the workload has ended
the harness sends one closing record (harness key `closing`, seq 0, logged in acks.csv like any record), its event
time far enough ahead that the job's watermark passes every window the workload's records fell in, and waits until
a batch of the job runs with that watermark (its checkpoint's offsets log), which emits them. The closing record's
own windows stay open: never due, never judged."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from contract.applications import APPEND, APPLICATION
from harness.errors import HarnessError
from harness.evidence.checkpoint import batch_watermark_ms, committed_batches
from harness.evidence.history import CLOSING_SENT, WINDOWS_CLOSED, WINDOWS_NOT_CLOSED
from harness.evidence.intervals import interval_ms
from harness.runner.preflight import canary_value, send_canary, source_encoder
from harness.scenario.applications import declared_filters
from harness.waiting import wait_for

if TYPE_CHECKING:
    from pathlib import Path

    from harness.runner.pipeline_run import PipelineRun

CLOSING_KEY = "closing"
CLOSE_TIMEOUT_S = 120.0


def _passed(checkpoints: Path, watermark_ms: int) -> bool:
    """Whether a committed batch of a query under `checkpoints` ran with a watermark of at least `watermark_ms`."""
    for query in checkpoints.glob("*"):
        batches = committed_batches(query)
        try:
            if batches and batch_watermark_ms(query, batches[-1]) >= watermark_ms:
                return True
        except (OSError, ValueError, IndexError):  # an offsets file being written: the next look reads it
            continue
    return False


def close_windows(run: PipelineRun) -> None:
    """Send the closing record and wait for every appending windowed application to emit its due windows; a job
    that does not within the deadline leaves them open (not judged), and the history says so."""
    streamlets = run.scenario.blueprint.streamlets
    counters = {
        name: inst.settings["window"]
        for name, inst in streamlets.items()
        if inst.kind == APPLICATION and (inst.settings.get("window") or {}).get("mode") == APPEND
    }
    if not counters:
        return
    now = int(time.time() * 1000)
    due = {}  # application -> the watermark that closes every window the workload's records fell in
    for name, window in counters.items():
        size, slide = interval_ms(window["size"]), interval_ms(window["slide"])
        due[name] = (now // slide) * slide + size
    event_ms = max(due[n] + interval_ms(w["watermark"]) for n, w in counters.items()) + 1000
    w = run.scenario.workload
    filters = declared_filters(run.scenario.blueprint)
    keeps = [filters[n] for n in counters if n in filters]
    topic = run.topic_name(w.topic)
    closing = run.topology.source_keys().get(topic, "") + CLOSING_KEY  # of the first source topic, as its keys
    value, key, headers = canary_value(w.record, keeps, [None], w.seed, event_ms, key=closing)
    message = (source_encoder(w)(value), key, headers)
    t0 = time.monotonic()
    try:
        send_canary(run.kafka, topic, run.ack_log, message, event_ms, key=closing)
        run.history.record(CLOSING_SENT, key=closing, seq=0, event_ms=event_ms, due=due)
        wait_for(
            lambda: all(_passed(run.layout.checkpoints(n), due[n]) for n in counters),
            timeout=CLOSE_TIMEOUT_S,
            interval=0.5,
            what="the windowed applications to pass the closing watermark",
            abort=run.dead_driver,
        )
    except HarnessError as exc:  # not written, not passed in time, or the job died: the drain sees to the rest
        run.history.record(WINDOWS_NOT_CLOSED, reason=str(exc))
        run.say(f"windows not closed: {exc} (windows still open are not judged)")
        return
    run.history.record(WINDOWS_CLOSED, seconds=round(time.monotonic() - t0, 3))
    run.say(f"closing record: every window due was emitted in {time.monotonic() - t0:.1f}s")
