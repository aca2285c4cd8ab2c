"""Counting the generator's ack log (acks.csv) while it grows, reading each line once."""

from __future__ import annotations

from pathlib import Path

from harness.evidence.tail import LineTail

RESEND_LINE = b",1"  # the end of a line the resend fault wrote (its last column, `resend`, is 1)


class AckCounter:
    """Acknowledged and unknown-outcome records so far (see ACK_LOG_COLUMNS); an aborted line is neither (its
    record is written again), nor a resend's line (a copy of a record counted already)."""

    def __init__(self, path: Path):
        self._tail = LineTail(path)
        self._header_seen = False
        self.acked = 0
        self.unknown = 0

    def poll(self) -> "AckCounter":
        lines = self._tail.new_lines()
        if lines and not self._header_seen:
            lines, self._header_seen = lines[1:], True
        lines = [line for line in lines if not line.endswith(RESEND_LINE)]  # a copy sent again, not a record
        acked = sum(1 for line in lines if b",acked," in line)
        aborted = sum(1 for line in lines if b",aborted," in line)
        self.acked += acked
        self.unknown += len(lines) - acked - aborted
        return self
