"""An egress's evidence: which kind it declares, and the store's tables and columns the checker reads.

records    the built-in store's `audit` and `records` tables (every record received; the state)
windows    its `window_audit` and `windows` tables (window counts received; the state)
exported   `audit` (ctx.audit) and the state an egress of one's own exports at the end of the run
topic      the records of a Kafka topic an application writes (an output), as the run recorded them
           (topics/<topic>.jsonl): every copy is a delivery, and every copy stays for its readers (the state)
aggregate  a running aggregate's values per group an output holds instead of records (contract/aggregates.py): a
           Kafka topic as the run recorded it (topics/<topic>.jsonl), judged by harness/checker/aggregates.py
"""

from __future__ import annotations

RECORDS = "records"
WINDOWS = "windows"
EXPORTED = "exported"
TOPIC = "topic"
AGGREGATE = "aggregate"
EVIDENCE_KINDS = (RECORDS, WINDOWS, EXPORTED, TOPIC, AGGREGATE)

# The store's tables (an SQLite file per egress, or a PostgreSQL schema per egress).
AUDIT = "audit"  # every record the egress received, with the batch id it came in
STATE = RECORDS  # the egress's state (PRIMARY KEY (key, seq) in upsert mode)
COMMITTED_BATCHES = "committed_batches"  # batch ids written (transactional mode)
WINDOW_AUDIT = "window_audit"
WINDOW_STATE = WINDOWS

AUDIT_COLUMNS = (
    "query",
    "batch_id",
    "key",
    "seq",
    "event_time_ms",
    "batches",
    "topic",
    "kafka_partition",
    "kafka_offset",
    "received_ms",
)
STATE_COLUMNS = ("key", "seq", "event_time_ms", "payload", "batch_id", "batches", "written_ms")
COMMITTED_COLUMNS = ("batch_id", "committed_ms")
WINDOW_AUDIT_COLUMNS = (
    "batch_id",
    "key",
    "window_start_ms",
    "window_end_ms",
    "count",
    "batches",
    "topic",
    "kafka_partition",
    "kafka_offset",
    "received_ms",
)
WINDOW_STATE_COLUMNS = ("key", "window_start_ms", "window_end_ms", "count", "batch_id", "written_ms")
TABLES = {
    AUDIT: AUDIT_COLUMNS,
    STATE: STATE_COLUMNS,
    COMMITTED_BATCHES: COMMITTED_COLUMNS,
    WINDOW_AUDIT: WINDOW_AUDIT_COLUMNS,
    WINDOW_STATE: WINDOW_STATE_COLUMNS,
}
PRIMARY_KEYS = {COMMITTED_BATCHES: ("batch_id",), WINDOW_STATE: ("key", "window_start_ms")}  # STATE: in upsert mode
UPSERT_KEY = ("key", "seq")
MAIN_QUERY = "main"  # the audit's query name where an egress runs one query
