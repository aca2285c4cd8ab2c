"""Kafka clusters: the embedded KRaft cluster the harness starts, and admin access to any cluster."""

from harness.cluster.admin import KafkaAdmin, PartitionOffsets, read_topic
from harness.cluster.embedded import Broker, BrokerStatus, EmbeddedCluster

__all__ = ["Broker", "BrokerStatus", "EmbeddedCluster", "KafkaAdmin", "PartitionOffsets", "read_topic"]
