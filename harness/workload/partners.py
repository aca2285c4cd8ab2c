"""The partner topics' records (harness/scenario/partners.py): each record drawn for a topic that partner topics
answer is answered by one record of each, due `after_s` after it (`late_by_s` later still for a seeded late share),
or by none (a seeded missing share). The answer takes the answered record's key number under its own topic's prefix
(orders:k0003 -> payments:k0003), a seq of its own, and the answered record's id in its `field`. What became of
every answer is a line of partners.csv (harness/evidence/partners.py), written as it is decided."""

from __future__ import annotations

import csv
import heapq
import itertools
import random
import time

from contract.identity import compose
from harness.evidence.partners import ANSWERED, LATE, MISSING, PARTNER_COLUMNS, UNSENT
from harness.workload.generator_settings import WorkloadSettings


class Partners:
    """Answers owed, in due order: note() each drawn record, due() the answers whose time has come."""

    def __init__(self, settings: WorkloadSettings):
        self._rng = random.Random(f"partners-{settings.seed}")
        prefixes = {source["topic"]: source["prefix"] for source in settings.sources}
        self._answering: dict[str, list[tuple[str, dict]]] = {}  # answered prefix -> (partner prefix, partner)
        self._topics: dict[str, str] = {}  # partner prefix -> its topic
        for source in settings.partners:
            of = prefixes[source["partner"]["of"]]
            self._answering.setdefault(of, []).append((source["prefix"], source["partner"]))
            self._topics[source["prefix"]] = source["topic"]
        self._queue: list = []  # (due monotonic time, order, answered key, seq, partner prefix, partner, late)
        self._order = itertools.count()
        self._seqs: dict[str, int] = {}
        self._file = open(settings.partner_log, "a", newline="")
        self._csv = csv.writer(self._file)
        if self._file.tell() == 0:
            self._csv.writerow(PARTNER_COLUMNS)
        self.sent = 0

    def note(self, key: str, seq: int) -> None:
        """A record drawn: what answers it, each partner's decided from the seed."""
        for of, answering in self._answering.items():
            if not key.startswith(of):
                continue
            for prefix, partner in answering:
                if self._rng.random() < partner["missing"]:
                    self._csv.writerow((key, seq, self._topics[prefix], MISSING, "", ""))
                    continue
                late = self._rng.random() < partner["late_share"]
                delay = partner["after_s"] + (partner["late_by_s"] if late else 0.0)
                entry = (time.monotonic() + delay, next(self._order), key, seq, prefix, partner, late)
                heapq.heappush(self._queue, entry)

    @property
    def waiting(self) -> bool:
        return bool(self._queue)

    def due(self) -> list[tuple[str, int, dict]]:
        """The answers due now: each one's key, seq and the fields it carries (the answered record's id)."""
        now, found = time.monotonic(), []
        while self._queue and self._queue[0][0] <= now:
            _, _, key, seq, prefix, partner, late = heapq.heappop(self._queue)
            own = prefix + key[len(self._of(key)) :]
            own_seq = self._seqs.get(own, 0)
            self._seqs[own] = own_seq + 1
            self._csv.writerow((key, seq, self._topics[prefix], LATE if late else ANSWERED, own, own_seq))
            found.append((own, own_seq, {partner["field"]: compose(partner["id_format"], key, seq)}))
        self.sent += len(found)
        if found:
            self._file.flush()
        return found

    def _of(self, key: str) -> str:
        return next(of for of in self._answering if key.startswith(of))

    def close(self) -> None:
        """The workload stopped: the answers not yet due are never sent."""
        for _, _, key, seq, prefix, _, _ in sorted(self._queue):
            self._csv.writerow((key, seq, self._topics[prefix], UNSENT, "", ""))
        self._queue = []
        self._file.close()
