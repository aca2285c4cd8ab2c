"""The Docker backend: Kafka brokers as containers (built and run through the Docker SDK), and broker faults on
containers, the harness's own or a user's compose stack's."""
