"""The kinds pipeline.json gives an application (a team's own job, run by its command) and its outputs (egresses
the harness reads where an application writes, instead of running them): a Kafka topic, a database table, or a
table of files (Delta Lake, or Spark's Parquet file sink)."""

APPLICATION = "application"
KAFKA_OUTPUT = "kafka-output"
TABLE_OUTPUT = "table-output"
FILE_OUTPUT = "file-output"
OUTPUT_KINDS = (KAFKA_OUTPUT, TABLE_OUTPUT, FILE_OUTPUT)
WRITTEN_OUTPUTS = (TABLE_OUTPUT, FILE_OUTPUT)  # outputs that name the application writing them (`written_by`)

# How much of an output's writes the harness sees (pipeline.json's `observed`, refined by the history's
# output_exported): every one (a topic keeps every copy; a table's triggers saw every write), or part of them (rows
# changed by UPDATE statements no insert explains, writes that escape the triggers), or none (a table using a feature
# its reader does not implement: counted without it, its rows would be wrong). Partly: the verdict claims no more
# than the state shows (at most effectively-exactly-once), and the report says what it could not see; none: the
# verdict is unknown.
FULLY, PARTLY, UNREAD = "fully", "partly", "none"

# How a windowed output is written (its window's `mode`, Spark's output mode): each window once, after the watermark
# passed its end; or a row each time a window's count changes, the last one standing.
APPEND, UPDATE = "append", "update"
WINDOW_MODES = (APPEND, UPDATE)

# How an application's query runs (its `trigger`): Spark's micro-batches, each planned (offsets/N) before it runs
# and committed (commits/N) after; or Real-time Mode (Trigger.RealTime), one long batch per checkpoint interval,
# emitting records as they come and writing offsets/N and commits/N only at the interval's end.
MICRO_BATCH, REAL_TIME = "micro-batch", "real-time"
TRIGGERS = (MICRO_BATCH, REAL_TIME)

# How an application joins a partner topic (its `joins.outer`): an inner join keeps a record answered within the
# bound, joined; a left outer join keeps each record, joined or, once the watermark passed its bound unanswered, with
# the partner's columns null (padded).
LEFT_OUTER = "left"
