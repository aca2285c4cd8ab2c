"""Starting, tracking and stopping the processes a run owns (by pid, never by name)."""

from harness.process.ports import accepts, free_port, free_ports
from harness.process.supervisor import (
    ManagedProcess,
    ProcessRecord,
    Supervisor,
    live_recorded,
    recorded_processes,
    stop_all_recorded,
    stop_recorded,
)

__all__ = [
    "ManagedProcess",
    "ProcessRecord",
    "Supervisor",
    "accepts",
    "free_port",
    "free_ports",
    "live_recorded",
    "recorded_processes",
    "stop_all_recorded",
    "stop_recorded",
]
