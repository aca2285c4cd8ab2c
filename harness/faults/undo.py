"""A fault's undo: what makes the pipeline whole again after the fault's effect (a broker resumed, a topic's
retention restored, a driver restarted, a link healed).

A kind wraps each effect in `run.undos.undoing(...)`: the undo runs on the way out of the block, whether the
fault went as planned or failed half-way. An undo that fails is recorded (fault_undo_failed, with what it
would do) and stays pending: the drain tries every pending undo again (fault_undone when it works), and the
checker calls a run whose undo never happened unknown. Undos are idempotent: trying one twice does no harm.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterator

from harness.errors import HarnessError
from harness.evidence.history import FAULT_UNDO_FAILED, FAULT_UNDONE, History


class UndoFailed(HarnessError):
    """A fault's undo failed: the pipeline is not whole again (yet)."""


@dataclass
class Undo:
    number: int  # in the order the run registered them: names the undo across fault_undo_failed / fault_undone
    kind: str
    target: str
    what: str  # for people: "resume broker-2", "restore retention.ms of ingested"
    action: Callable[[], None] = field(repr=False)
    tries: int = 0


class Undos:
    """The run's undos: the ones in flight and the ones that failed and are pending."""

    def __init__(self, history: History):
        self.history = history
        self.pending: list[Undo] = []
        self._count = 0
        self._lock = threading.Lock()

    @contextmanager
    def undoing(self, kind: str, target: str, what: str, action: Callable[[], None]) -> Iterator[None]:
        """Run the block, then `action` (also when the block raised: the block's error is the one raised)."""
        with self._lock:
            self._count += 1
            undo = Undo(self._count, kind, target, what, action)
        try:
            yield
        except BaseException:
            self._attempt(undo)
            raise
        if not self._attempt(undo):
            raise UndoFailed(f"{kind} {target}: could not {what}")

    def _attempt(self, undo: Undo) -> bool:
        undo.tries += 1
        try:
            undo.action()
        except Exception as exc:  # the undo of a fault fails like the fault can: recorded, retried later
            reason = f"{type(exc).__name__}: {exc}".splitlines()[0][:500]
            self.history.record(
                FAULT_UNDO_FAILED,
                undo=undo.number,
                kind=undo.kind,
                target=undo.target,
                what=undo.what,
                reason=reason,
                tries=undo.tries,
            )
            with self._lock:
                if undo not in self.pending:
                    self.pending.append(undo)
            return False
        if undo.tries > 1:
            self.history.record(
                FAULT_UNDONE, undo=undo.number, kind=undo.kind, target=undo.target, what=undo.what, tries=undo.tries
            )
            with self._lock:
                self.pending.remove(undo)
        return True

    def retry(self) -> list[Undo]:
        """Try every pending undo once more; returns those still pending."""
        for undo in list(self.pending):
            self._attempt(undo)
        return list(self.pending)
