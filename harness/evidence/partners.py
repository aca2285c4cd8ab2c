"""The partner topics' log (partners.csv, harness/workload/partners.py): one line per record of a topic that partner
topics answer, per partner topic: the record (its key and seq), the partner topic, what became of its answer
(OUTCOMES), and the answer's key and seq where one was sent."""

from __future__ import annotations

PARTNER_COLUMNS = ("key", "seq", "partner_topic", "outcome", "partner_key", "partner_seq")
ANSWERED, LATE, MISSING, UNSENT = "answered", "late", "missing", "unsent"
OUTCOMES = {
    ANSWERED: "sent as planned (after_s after the record it answers)",
    LATE: "sent late_by_s later than planned",
    MISSING: "none, by design (the declared missing share)",
    UNSENT: "none, because the workload stopped before it was due",
}
