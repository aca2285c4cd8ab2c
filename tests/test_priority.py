"""harness/process/priority.py on real processes and threads: what a run started ahead runs is niced in its session's
group and in each of its threads, as it appears, and given its priority back."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

from harness.process.priority import Niced, renice, renice_threads
from harness.waiting import wait_for


def _autogroup_nice(pid: int) -> int | None:
    path = Path(f"/proc/{pid}/autogroup")  # absent from a kernel without autogroups
    return int(path.read_text().split()[-1]) if path.exists() else None


def test_a_process_started_while_niced_is_niced_in_its_session_and_given_its_priority_back():
    started: list[subprocess.Popen] = []
    try:
        with Niced(lambda: [p.pid for p in started], 10):
            started.append(subprocess.Popen(["sleep", "60"], start_new_session=True))
            pid = started[0].pid
            wait_for(lambda: os.getpriority(os.PRIO_PGRP, pid) == 10, timeout=10, what="the process niced")
        assert _autogroup_nice(pid) in (10, None)
        renice([pid], 0)
        if os.geteuid() == 0:  # raising a priority back needs the right to
            assert os.getpriority(os.PRIO_PGRP, pid) == 0 and _autogroup_nice(pid) in (0, None)
    finally:
        for proc in started:
            proc.kill()
            proc.wait()


def test_a_thread_started_by_a_niced_thread_is_niced_until_every_thread_is_given_back():
    own = os.getpriority(os.PRIO_PROCESS, 0)
    seen: dict[str, int] = {}
    child_ready, release = threading.Event(), threading.Event()

    def child() -> None:
        seen["child"] = threading.get_native_id()
        child_ready.set()
        release.wait(10)

    def parent() -> None:
        os.setpriority(os.PRIO_PROCESS, 0, own + 5)  # this thread's alone
        thread = threading.Thread(target=child)
        thread.start()
        thread.join()

    niced = threading.Thread(target=parent)
    niced.start()
    try:
        assert child_ready.wait(10)
        assert os.getpriority(os.PRIO_PROCESS, seen["child"]) == own + 5  # inherited from the thread that started it
        assert os.getpriority(os.PRIO_PROCESS, 0) == own  # not this one's
        renice_threads(own)
        if os.geteuid() == 0:
            assert os.getpriority(os.PRIO_PROCESS, seen["child"]) == own
    finally:
        release.set()
        niced.join()
