"""The peak memory of this process: the kernel's high-water mark of its resident set (VmHWM in /proc/self/status).

Not getrusage's ru_maxrss: Linux keeps that across exec, so a measuring child started by a bench that generated
its evidence in memory first would report the bench's peak as its own."""

from __future__ import annotations


def peak_kb() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
