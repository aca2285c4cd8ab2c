"""Resilience and delivery-semantics test harness for Spark Structured Streaming over Kafka."""

__version__ = "0.1.0"
