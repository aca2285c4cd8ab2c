"""The chaos driver: fault schedules drawn from the run's seed, and the fault actions."""
