"""Samples log-start and log-end offsets of every partition about once a second, into the history.

The checker needs them: a jump of the log-start offset while a consumer was
down is what retention deleted. A sample that fails (a broker down or paused)
is recorded once as an outage, not once per second.
"""

from __future__ import annotations

import time

from harness.cluster import KafkaAdmin
from harness.cluster.access import KafkaAccess
from harness.cluster.admin import offset_rows
from harness.evidence.history import OFFSETS, OFFSETS_AVAILABLE, OFFSETS_UNAVAILABLE, History
from harness.runner.periodic import PeriodicSampler


class OffsetSampler(PeriodicSampler):
    def __init__(self, access: KafkaAccess, topics: list[str], history: History, interval_s: float = 1.0):
        super().__init__("offset-sampler", interval_s)
        self.access, self.topics, self.history = access, topics, history
        self.latest: dict[tuple[str, int], tuple[int, int]] = {}  # (topic, partition) -> (log_start, log_end)
        self._admin: KafkaAdmin | None = None
        self._unavailable = False

    def sample(self) -> None:
        # Dated before the offsets are asked for: a record at or past a log end sampled was written after this.
        ts_ms = int(time.time() * 1000)
        try:
            if self._admin is None:
                self._admin = KafkaAdmin(self.access, request_timeout_ms=3000, connect_timeout_ms=3000)
            offsets = self._admin.offsets(self.topics)
        except Exception as exc:  # any failure to sample is an observation, never the end of the sampler
            if not self._unavailable:
                self.history.record(
                    OFFSETS_UNAVAILABLE, error=str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                )
                self._unavailable = True
            self._close_admin()
            return
        if self._unavailable:
            self.history.record(OFFSETS_AVAILABLE)
            self._unavailable = False
        self.latest = {(o.topic, o.partition): (o.log_start, o.log_end) for o in offsets}
        self.history.record(OFFSETS, ts_ms=ts_ms, partitions=offset_rows(offsets))

    def log_ends(self) -> dict[tuple[str, int], int]:
        """The latest log-end offset sampled per (topic, partition)."""
        return {tp: end for tp, (_, end) in self.latest.items()}

    def _close_admin(self) -> None:
        if self._admin is not None:
            try:
                self._admin.close()
            except Exception:  # closing a client whose broker is gone may fail; it is dropped either way
                pass
            self._admin = None

    def stop(self) -> None:
        super().stop()
        self._close_admin()
