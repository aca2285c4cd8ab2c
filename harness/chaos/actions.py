"""Fault actions on a running pipeline. Each records its begin and end, and its target, in the history.

They act on a running pipeline (harness.chaos.target.Pipeline: its drivers, brokers and topics) and know nothing
of schedules: the chaos driver decides when, these decide how. Every action
is blocking: when it returns, the pipeline is whole again (or, for a query
that must fail, restarted and left to fail).
"""

from __future__ import annotations

import json
import shutil
import signal
import time
from dataclasses import replace

from harness.cluster import KafkaAdmin
from harness.cluster.admin import offset_rows
from harness.cluster.follow import PartitionRecorder
from harness.errors import HarnessError, WaitTimeout
from harness.chaos.inflight import InFlight, OutputWatch, batch_in_flight
from harness.chaos.target import Pipeline
from harness.scenario.faults import broker_node
from harness.waiting import wait_for

SIGNALS = {"SIGKILL": signal.SIGKILL, "SIGTERM": signal.SIGTERM}
RETENTION_KEYS = ("retention.ms", "segment.ms")


def _driver(run: Pipeline, kind: str, streamlet: str):
    proc = run.drivers.get(streamlet)
    if proc is None:
        raise HarnessError(f"{kind}: no streamlet {streamlet!r} in this run")
    return proc


def _stop_driver(run: Pipeline, streamlet: str, sig: str) -> None:
    proc = run.drivers[streamlet]
    code = proc.kill() if sig == "SIGKILL" else proc.stop(timeout=60)
    run.history.record("process_killed", process=f"streamlet-{streamlet}", pid=proc.pid, signal=sig, exit_code=code)


def kill_driver(run: Pipeline, streamlet: str, signal: str = "SIGKILL", restart_after_s: float = 3.0,
                at: str = "anytime") -> None:
    """SIGKILL (crash) or SIGTERM (graceful stop) a streamlet's driver, then start it again.

    The restart uses the same checkpoint directories, so it resumes from the
    last committed batch; a batch planned but not committed is replayed.
    `at: after-write` first arms the driver's crash point and kills it while
    a batch is held between its write and Spark's commit: that batch is
    replayed for certain. `at: in-flight` needs no crash point (Spark's own
    sinks): it kills while a batch is planned and not committed and some of
    its output is already written (harness.chaos.inflight).
    """
    if signal not in SIGNALS:
        raise HarnessError(f"kill-driver: signal must be SIGKILL or SIGTERM, not {signal!r}")
    proc = _driver(run, "kill-driver", streamlet)
    if at == "in-flight":
        _kill_in_flight(run, streamlet, proc)
    else:
        held = _hold_after_write(run, streamlet, proc) if at == "after-write" else {}
        run.history.record("fault_begun", kind="kill-driver", target=streamlet, signal=signal, pid=proc.pid, at=at, **held)
        _stop_driver(run, streamlet, signal)
    time.sleep(restart_after_s)  # the outage itself is part of the fault
    _restart(run, "kill-driver", streamlet)


def _hold_after_write(run: Pipeline, streamlet: str, proc, timeout_s: float = 60.0) -> dict:
    """Arm the streamlet's crash point and wait until a batch holds there; returns {held_query, held_batch}.

    When no batch writes within `timeout_s` (no input), the arm is withdrawn,
    the history says so, and the kill goes ahead at whatever moment it is.
    """
    arm, held = run.layout.crash_arm(streamlet), run.layout.crash_held(streamlet)
    arm.parent.mkdir(parents=True, exist_ok=True)
    held.unlink(missing_ok=True)
    arm.touch()
    try:
        wait_for(held.exists, timeout=timeout_s, interval=0.05, what=f"a batch of {streamlet} to finish its write",
                 abort=lambda: None if proc.running() else "the driver exited")
    except WaitTimeout as exc:
        arm.unlink(missing_ok=True)
        if not held.exists():  # the arm may have been taken between the timeout and the unlink
            run.history.record("crash_point_missed", target=streamlet, reason=str(exc))
            return {}
    state = wait_for(lambda: _read_held(held), timeout=5, interval=0.05, what=f"{held} to be readable")
    return {"held_query": state["query"], "held_batch": state["batch"]}


def _kill_in_flight(run: Pipeline, streamlet: str, proc, timeout_s: float = 60.0) -> None:
    """SIGKILL the driver once a batch is in flight with some of its output written; the history names that
    batch (held_query, held_batch, planned_ms). Without such a moment within `timeout_s` (no input), the
    history says so and the kill goes ahead at whatever moment it is."""
    checkpoints = run.layout.checkpoints(streamlet)
    watch = OutputWatch(run.bootstrap, run.output_topics(streamlet), run.layout.workdir(streamlet))
    deadline = time.monotonic() + timeout_s
    held: InFlight | None = None
    try:
        while time.monotonic() < deadline and proc.running():
            latest = watch.poll(0.01)
            flight = batch_in_flight(checkpoints)
            if flight is not None and latest > flight.planned_ms:
                held = flight
                break
    finally:
        watch.close()
    fields = {"held_query": held.query, "held_batch": held.batch, "planned_ms": held.planned_ms} if held else {}
    run.history.record("fault_begun", kind="kill-driver", target=streamlet, signal="SIGKILL", pid=proc.pid, at="in-flight", **fields)
    _stop_driver(run, streamlet, "SIGKILL")
    if held is None:
        run.history.record("crash_point_missed", target=streamlet, reason=f"no batch in flight with output written within {timeout_s:.0f}s")
    elif (checkpoints / held.query / "commits" / str(held.batch)).exists():  # committed in the instant before the kill
        run.history.record("crash_point_missed", target=streamlet, reason=f"batch {held.batch} committed just before the kill")


def _read_held(path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _restart(run: Pipeline, kind: str, streamlet: str, **fields) -> None:
    """Start the streamlet again and end the fault once it runs batches (or has failed, which is recorded)."""
    new = run.start_driver(streamlet)
    up = run.wait_up(streamlet)
    run.history.record("fault_ended", kind=kind, target=streamlet, new_pid=new.pid, restarted=up, **fields)


def _broker(run: Pipeline, kind: str, target: str):
    if run.cluster is None:
        raise HarnessError(f"{kind}: broker faults need the embedded cluster")
    return run.cluster.broker(broker_node(target))


def kill_broker(run: Pipeline, target: str, down_s: float = 10.0) -> None:
    """SIGKILL a broker (no controlled shutdown), restart it after `down_s`, wait until it is listed again."""
    broker = _broker(run, "broker-kill", target)
    run.history.record("fault_begun", kind="broker-kill", target=target, pid=broker.pid)
    pid = broker.pid
    broker.kill()
    run.history.record("process_killed", process=broker.name, pid=pid, signal="SIGKILL")
    time.sleep(down_s)
    broker.start(wait=True, timeout=120)
    run.history.record("process_started", process=broker.name, pid=broker.pid, role="broker")
    run.history.record("fault_ended", kind="broker-kill", target=target, new_pid=broker.pid)


def pause_broker(run: Pipeline, target: str, paused_s: float = 10.0) -> None:
    """SIGSTOP a broker: its sockets stay open but nothing answers; SIGCONT after `paused_s`."""
    broker = _broker(run, "broker-pause", target)
    run.history.record("fault_begun", kind="broker-pause", target=target, pid=broker.pid)
    broker.pause()
    run.history.record("process_paused", process=broker.name, pid=broker.pid, signal="SIGSTOP")
    try:
        time.sleep(paused_s)
    finally:
        broker.resume()
    run.history.record("process_resumed", process=broker.name, pid=broker.pid, signal="SIGCONT")
    run.history.record("fault_ended", kind="broker-pause", target=target)


def shrink_retention(run: Pipeline, streamlet: str, retention_ms: int = 1000, timeout_s: float = 90.0) -> None:
    """Stop a streamlet, shrink its input topics' retention until records it has not read are deleted,
    restore the retention, restart the streamlet.

    The run directory keeps what the checker needs: the streamlet's committed positions when it
    stopped (history consumer_position); every record of its input from there on, recorded before
    anything is deleted and followed while retention is shrunk (at-risk/<streamlet>-<n>/<topic>.jsonl); and
    the log-start offsets when it resumed (history log_start_observed, naming that folder). The
    records at risk below the log start were deleted unread, on the source or any intermediate topic.
    """
    _driver(run, "retention-shrink", streamlet)
    topics = run.input_topics(streamlet)
    run.history.record("fault_begun", kind="retention-shrink", target=streamlet, topics=topics, retention_ms=retention_ms)
    _stop_driver(run, streamlet, "SIGTERM")
    committed = _record_position(run, streamlet)
    shrunk = {"retention.ms": str(retention_ms), "segment.ms": str(max(100, retention_ms))}
    at_risk = run.layout.at_risk(streamlet, len(run.layout.at_risk_dirs(streamlet)) + 1)
    with KafkaAdmin(run.bootstrap) as admin:
        offsets = admin.offsets(topics)
        starts = {(o.topic, o.partition): committed.get((o.topic, o.partition), o.log_start) for o in offsets}
        recorder = PartitionRecorder(run.bootstrap, starts, at_risk, run.value_decoders()).start()
        try:
            recorder.wait_caught_up({(o.topic, o.partition): o.log_end for o in offsets})  # kept before anything is deleted
            original = {t: admin.topic_config(t) for t in topics}
            for topic in topics:
                admin.alter_topic_config(topic, shrunk)
                run.history.record("topic_config_changed", topic=topic, configs=shrunk)

            def unread_records_deleted() -> bool:
                offsets = admin.offsets(topics)
                passed = [o.log_start > committed.get((o.topic, o.partition), 0) for o in offsets]
                behind = [o.log_end > committed.get((o.topic, o.partition), 0) for o in offsets]
                return any(passed) and all(p or not b for p, b in zip(passed, behind))

            try:
                wait_for(unread_records_deleted, timeout=timeout_s, interval=0.5,
                         what=f"log-start offsets of {', '.join(topics)} to pass {streamlet}'s committed offsets")
            except WaitTimeout as exc:
                run.history.record("fault_incomplete", kind="retention-shrink", target=streamlet, reason=str(exc))
            for topic in topics:
                restored = {k: original[topic].get(k) for k in RETENTION_KEYS}
                admin.alter_topic_config(topic, restored)
                run.history.record("topic_config_changed", topic=topic, configs=restored)
            log_start = _settled_offsets(admin, topics)
            recorder.wait_caught_up({(o.topic, o.partition): o.log_end for o in log_start})
        finally:
            recorder.stop()
    run.history.record("log_start_observed", streamlet=streamlet, partitions=offset_rows(log_start),
                       at_risk=str(at_risk.relative_to(run.layout.root)), at_risk_records=recorder.records)
    _restart(run, "retention-shrink", streamlet)


def _record_position(run: Pipeline, streamlet: str) -> dict[tuple[str, int], int]:
    """Record (and return) where a stopped streamlet had committed up to: where records start to be skipped
    if it does not resume from there."""
    committed = run.committed_offsets(streamlet)
    run.history.record("consumer_position", streamlet=streamlet, partitions=[[t, p, o] for (t, p), o in sorted(committed.items())])
    return committed


def _settled_offsets(admin: KafkaAdmin, topics: list[str], quiet_s: float = 3.0, timeout_s: float = 30.0):
    """Log-start offsets once the restored retention has taken effect (unchanged for `quiet_s`)."""
    last, since = None, time.monotonic()
    deadline = time.monotonic() + timeout_s
    while True:
        offsets = admin.offsets(topics)
        starts = [o.log_start for o in offsets]
        if starts != last:
            last, since = starts, time.monotonic()
        elif time.monotonic() - since >= quiet_s or time.monotonic() > deadline:
            return offsets
        time.sleep(0.5)


def redeploy(run: Pipeline, streamlet: str, starting: str = "earliest", timestamp_back_s: float = 0.0,
             down_s: float = 3.0) -> None:
    """Stop a streamlet, delete its checkpoints, restart it from earliest, latest or a timestamp.

    "Deleting" moves the checkpoints to checkpoints-retired/ (Spark no longer
    sees them; the checker still can). The timestamp is the stop time minus
    `timestamp_back_s`.
    """
    _driver(run, "redeploy", streamlet)
    run.history.record("fault_begun", kind="redeploy", target=streamlet, starting=starting)
    _stop_driver(run, streamlet, "SIGTERM")
    stopped_ms = int(time.time() * 1000)
    _record_position(run, streamlet)
    checkpoints = run.layout.checkpoints(streamlet)
    retired = run.layout.retired_checkpoints(streamlet, len(run.layout.retired_checkpoint_dirs(streamlet)) + 1)
    if checkpoints.exists():
        retired.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(checkpoints), str(retired))
    run.history.record("checkpoint_deleted", streamlet=streamlet, path=str(checkpoints), kept_as=str(retired))
    time.sleep(down_s)
    options = run.scenario.options_for(streamlet)
    if starting == "timestamp":
        options = replace(options, starting_timestamp_ms=stopped_ms - int(timestamp_back_s * 1000))
    else:
        options = replace(options, starting_offsets=starting, starting_timestamp_ms=None)
    run.source_overrides[streamlet] = options
    _restart(run, "redeploy", streamlet, starting_offsets=options.starting_offsets,
             starting_timestamp_ms=options.starting_timestamp_ms)


ACTIONS = {
    "kill-driver": kill_driver,
    "broker-kill": kill_broker,
    "broker-pause": pause_broker,
    "retention-shrink": shrink_retention,
    "redeploy": redeploy,
}
