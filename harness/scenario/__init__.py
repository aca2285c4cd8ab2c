"""Scenario files: what to run (blueprint, workload, egress store, cluster)."""

from harness.scenario.parse import ClusterSpec, Scenario, WorkloadSpec, load_scenario

__all__ = ["ClusterSpec", "Scenario", "WorkloadSpec", "load_scenario"]
