"""The workload: keyed, sequence-numbered records produced to the source topic."""
