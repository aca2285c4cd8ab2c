"""The kinds pipeline.json gives an application (a team's own job, run by its command) and its outputs (egresses
the harness reads where an application writes, instead of running them): a Kafka topic, or a database table."""

APPLICATION = "application"
KAFKA_OUTPUT = "kafka-output"
TABLE_OUTPUT = "table-output"
OUTPUT_KINDS = (KAFKA_OUTPUT, TABLE_OUTPUT)
