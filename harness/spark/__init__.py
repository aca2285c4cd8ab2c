"""The Spark side: sessions with the Kafka connector, and drivers as separate processes."""
