"""What every streamlet driver shares: running its queries until stopped.

SIGTERM (or Ctrl-C) asks for a graceful stop: each query is stopped between
micro-batches (a running batch gets a few seconds to finish and commit) and
the SparkSession is closed, so a restart resumes from the checkpoint with
nothing replayed. SIGKILL is the crash case and needs no code.
"""

from __future__ import annotations

import signal
import sys
import time

BATCH_FINISH_S = 5.0


class StopRequest:
    """Set by SIGTERM/SIGINT; polled between short waits on the queries."""

    def __init__(self) -> None:
        self.requested = False
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)

    def _on_signal(self, signum, frame) -> None:
        self.requested = True


def run_until_stopped(spark, queries, poll_seconds: float = 0.2) -> int:
    """Wait on `queries` until a stop is requested or one of them terminates.

    Returns the driver's exit code: 0 after a requested stop, 1 if a query
    ended by itself with an error (its exception is printed to the log).
    """
    stop = StopRequest()
    failed = None
    try:
        while not stop.requested:
            ended = [q for q in queries if not q.isActive]
            if ended:
                failed = next((q for q in ended if q.exception() is not None), None)
                break
            queries[0].awaitTermination(poll_seconds)  # the signal is handled once the call returns
    finally:
        deadline = time.monotonic() + BATCH_FINISH_S
        for query in queries:
            _stop_between_batches(query, deadline)
        spark.stop()
    if failed is not None:
        print(f"query {failed.name} failed: {failed.exception()}", file=sys.stderr, flush=True)
        return 1
    return 0


def _stop_between_batches(query, deadline: float) -> None:
    """Stop `query` once no trigger is running, or at `deadline` whatever it is doing.

    query.stop() interrupts a batch in flight; one interrupted between its
    write and Spark's commit would be replayed after the restart, which is a
    crash's signature, not a graceful stop's.
    """
    while query.isActive and query.status["isTriggerActive"] and time.monotonic() < deadline:
        time.sleep(0.02)
    if query.isActive:
        query.stop()
