"""The kinds pipeline.json gives an application (a team's own job, run by its command) and an output (an egress the
harness reads where an application writes instead of running it)."""

APPLICATION = "application"
KAFKA_OUTPUT = "kafka-output"
