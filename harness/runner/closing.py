"""Closing the windows of an application that counts by event-time window in append mode, and the padded rows of a
left outer join: Spark emits a window once the watermark has passed its end (a padded row once it has passed its
record's bound), and the watermark moves only with newer records. So once the workload has ended
the harness sends one closing record (harness key `closing`, seq 0, logged in acks.csv like any record), its event
time far enough ahead that the job's watermark passes every window the workload's records fell in, and waits until
a batch of the job runs with that watermark (its checkpoint's offsets log), which emits them. A join's watermark is
the lowest of its sides', so each side gets one (a partner's without the field it answers by: it joins nothing). The
closing record's own windows and rows stay open: never due, never judged."""

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


def _closers(streamlets: dict, now_ms: int) -> tuple[dict[str, int], int, set[str]]:
    """Each application the closing record is for, with the watermark that makes all it holds for the workload's
    records due (an appending window's end; a left outer join's bound, its padded rows); the closing record's event
    time (beyond each of those by the application's watermark delay); and the source topics a left outer join reads
    (a join's watermark is the lowest of its sides': each side gets the closing record)."""
    due, lead, sides = {}, [], set()
    for name, inst in streamlets.items():
        window, joins = inst.settings.get("window") or {}, inst.settings.get("joins") or {}
        if inst.kind != APPLICATION:
            continue
        if window.get("mode") == APPEND:
            size, slide = interval_ms(window["size"]), interval_ms(window["slide"])
            due[name] = (now_ms // slide) * slide + size
            lead.append(due[name] + interval_ms(window["watermark"]))
        elif joins.get("outer"):
            due[name] = now_ms + int(joins["within_s"] * 1000)
            lead.append(due[name] + int(joins["watermark_s"] * 1000))
            sides |= {joins["of"], joins["partner"]}
    return due, max(lead, default=now_ms) + 1000, sides


def close_windows(run: PipelineRun) -> None:
    """Send the closing record and wait for every appending windowed application to emit its due windows, and every
    left outer join its padded rows; a job that does not within the deadline leaves them open (not judged), and the
    history says so."""
    w = run.scenario.workload
    due, event_ms, sides = _closers(run.scenario.blueprint.streamlets, int(time.time() * 1000))
    if not due:
        return
    filters = declared_filters(run.scenario.blueprint)
    keeps = [filters[n] for n in due if n in filters]
    fed = [s for i, s in enumerate(w.fed) if i == 0 or s.topic.name in sides]
    prefixes = run.topology.source_keys()
    t0 = time.monotonic()
    try:
        for source in fed:
            topic = run.topic_name(source.topic)
            closing = prefixes.get(topic, "") + CLOSING_KEY  # of its source topic, as its keys
            value, key, headers = canary_value(
                source.record, keeps if source is fed[0] else [], [None], w.seed, event_ms, key=closing
            )
            send_canary(run.kafka, topic, run.ack_log, (source_encoder(source)(value), key, headers), event_ms, closing)
            run.history.record(CLOSING_SENT, key=closing, seq=0, event_ms=event_ms, due=due, topic=topic)
        wait_for(
            lambda: all(_passed(run.layout.checkpoints(n), due[n]) for n in due),
            timeout=CLOSE_TIMEOUT_S,
            interval=0.5,
            what="the applications to pass the closing watermark",
            abort=run.dead_driver,
        )
    except HarnessError as exc:  # not written, not passed in time, or the job died: the drain sees to the rest
        run.history.record(WINDOWS_NOT_CLOSED, reason=str(exc))
        run.say(f"windows not closed: {exc} (windows and padded rows still open are not judged)")
        return
    run.history.record(WINDOWS_CLOSED, seconds=round(time.monotonic() - t0, 3))
    run.say(f"closing record: every window and padded row due was emitted in {time.monotonic() - t0:.1f}s")
