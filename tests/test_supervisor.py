"""Process supervision with real processes and real signals."""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.process import ProcessRecord, Supervisor, stop_all_recorded, stop_recorded
from harness.process.supervisor import session_members
from harness.waiting import wait_for

# A parent that starts a child in its own process group, then both sleep.
PARENT_WITH_CHILD = (
    "import subprocess, sys, time;"
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']);"
    "time.sleep(600)"
)


def test_stop_kills_the_whole_session_including_children(tmp_path):
    with Supervisor(tmp_path / "pids") as sup:
        proc = sup.start("parent", [sys.executable, "-c", PARENT_WITH_CHILD], tmp_path / "parent.log")
        wait_for(lambda: len(session_members(proc.record)) == 2, timeout=10, what="child to start")
        code = proc.stop(timeout=5)
        assert code == -signal.SIGTERM
        assert session_members(proc.record) == []


def test_kill_is_sigkill_and_pause_freezes(tmp_path):
    with Supervisor(tmp_path / "pids") as sup:
        proc = sup.start("sleeper", [sys.executable, "-c", "import time; time.sleep(600)"], tmp_path / "s.log")
        proc.pause()
        wait_for(proc.is_paused, timeout=5, what="process to be stopped")
        proc.resume()
        wait_for(lambda: not proc.is_paused(), timeout=5, what="process to continue")
        assert proc.kill() == -signal.SIGKILL
        assert not proc.running()


# A parent whose child runs four threads, each appending to a file without pause.
BUSY_THREADS = (
    "import subprocess, sys;"
    "subprocess.Popen([sys.executable, '-c', 'import sys, threading\\n"
    "def spin():\\n    while True:\\n        open(sys.argv[1], \\'a\\').write(\\'x\\')\\n"
    "for _ in range(4): threading.Thread(target=spin).start()', sys.argv[1]]).wait()"
)


def _thread_states(pid: int) -> list[str]:
    states = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        raw = (task / "stat").read_text()
        states.append(raw[raw.rindex(")") + 2])
    return states


def test_pause_returns_once_every_thread_of_the_session_is_stopped(tmp_path):
    """A kill in flight freezes a driver to look at its checkpoint: no thread of it may still write then."""
    out = tmp_path / "written"
    with Supervisor(tmp_path / "pids") as sup:
        proc = sup.start("busy", [sys.executable, "-c", BUSY_THREADS, str(out)], tmp_path / "b.log")
        wait_for(
            lambda: len(session_members(proc.record)) == 2 and out.exists() and out.stat().st_size > 1000,
            timeout=10,
            what="the child's threads to write",
        )
        proc.pause()
        members = session_members(proc.record)
        assert len(members) == 2 and all(set(_thread_states(pid)) == {"T"} for pid in members)
        size = out.stat().st_size
        time.sleep(0.3)
        assert out.stat().st_size == size and proc.is_paused()
        proc.resume()
        wait_for(lambda: out.stat().st_size > size, timeout=5, what="the threads to write again")
        assert not proc.is_paused()
        proc.kill()


def test_pid_files_let_another_process_stop_what_was_started(tmp_path):
    sup = Supervisor(tmp_path / "pids")
    proc = sup.start("orphan", [sys.executable, "-c", PARENT_WITH_CHILD], tmp_path / "o.log")
    wait_for(lambda: len(session_members(proc.record)) == 2, timeout=10, what="child to start")
    # A fresh reading of the pid files, as `harness cluster down` would do it.
    stopped = stop_all_recorded(tmp_path / "pids", timeout=5)
    assert [r.pid for r in stopped] == [proc.pid]
    assert not proc.running()
    proc.wait_exit()


def test_a_recycled_pid_is_never_signalled(tmp_path):
    with Supervisor(tmp_path / "pids") as sup:
        proc = sup.start("victim", [sys.executable, "-c", "import time; time.sleep(600)"], tmp_path / "v.log")
        # Same pid, another start time: a pid file from before the pid was reused.
        stale = ProcessRecord("old", proc.pid, proc.record.start_ticks - 1, ("old",), "")
        assert session_members(stale) == []
        assert stop_recorded(stale) is False
        assert proc.running()


def test_sigterm_ignored_escalates_to_sigkill(tmp_path):
    stubborn = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); "
        "time.sleep(600)"
    )
    with Supervisor(tmp_path / "pids") as sup:
        proc = sup.start("stubborn", [sys.executable, "-c", stubborn], tmp_path / "st.log")
        wait_for(lambda: "ready" in (tmp_path / "st.log").read_text(), timeout=10, what="handler installed")
        t0 = time.monotonic()
        assert proc.stop(timeout=1) == -signal.SIGKILL
        assert time.monotonic() - t0 >= 1  # SIGTERM had its second before SIGKILL


# A driver's way: its handler counts each SIGTERM, then it shuts down slowly and exits 0.
SLOW_TO_STOP = """
import signal, sys, time
seen = []
signal.signal(signal.SIGTERM, lambda *_: seen.append(1))
print("ready", flush=True)
while not seen:
    time.sleep(0.01)
time.sleep(0.5)
print("sigterms", len(seen), flush=True)
"""


def test_a_process_asked_to_stop_is_waited_for_without_a_second_sigterm(tmp_path):
    with Supervisor(tmp_path / "pids") as sup:
        proc = sup.start("driver", [sys.executable, "-c", SLOW_TO_STOP], tmp_path / "d.log")
        wait_for(lambda: "ready" in (tmp_path / "d.log").read_text(), timeout=10, what="handler installed")
        proc.ask_to_stop()
        assert proc.stop(timeout=30, asked=True) == 0
    assert "sigterms 1" in (tmp_path / "d.log").read_text()


def test_start_of_a_missing_program_is_a_clear_error(tmp_path):
    from harness.errors import HarnessError

    with Supervisor(tmp_path / "pids") as sup:
        with pytest.raises(HarnessError, match="cannot start ghost"):
            sup.start("ghost", [str(tmp_path / "no-such-program")], tmp_path / "g.log")


def test_a_closed_supervisor_stops_everything_and_refuses_a_late_start(tmp_path):
    """A fault's thread restarting a driver while the run is being stopped must not leave a process behind."""
    sup = Supervisor(tmp_path / "pids")
    proc = sup.start("sleeper", [sys.executable, "-c", "import time; time.sleep(600)"], tmp_path / "s.log")
    sup.close(timeout=5)
    assert not proc.running()
    with pytest.raises(HarnessError, match="supervisor is closed"):
        sup.start("late", [sys.executable, "-c", "import time; time.sleep(600)"], tmp_path / "late.log")
    sup.stop_all()  # a stopped, not closed, supervisor starts again (a cluster stopped and started)


def test_free_ports_are_distinct_and_below_the_ephemeral_range_outgoing_connections_take():
    from harness.process.ports import EPHEMERAL, free_ports

    ports = free_ports(20)
    low = int(EPHEMERAL.read_text().split()[0]) if EPHEMERAL.exists() else 32_768
    assert len(set(ports)) == 20 and all(10_000 <= p < low for p in ports)


# A parent forking a short-lived child every few milliseconds, as a PySpark driver forks its Python workers.
FORKING = (
    "import os, time\n"
    "while True:\n"
    "    if os.fork() == 0:\n"
    "        time.sleep(0.2)\n"
    "        os._exit(0)\n"
    "    time.sleep(0.003)\n"
    "    try:\n"
    "        os.waitpid(-1, os.WNOHANG)\n"
    "    except ChildProcessError:\n"
    "        pass\n"
)


def test_pause_stops_a_child_forked_as_the_signal_went_out(tmp_path):
    """The session is looked at again once what was signalled stopped: a child forked meanwhile is stopped too."""
    with Supervisor(tmp_path / "pids") as sup:
        proc = sup.start("forking", [sys.executable, "-c", FORKING], tmp_path / "f.log")
        wait_for(lambda: len(session_members(proc.record)) > 5, timeout=10, what="children to be forked")
        for _ in range(20):
            proc.pause()
            assert proc.is_paused()
            proc.resume()
        assert proc.kill() == -signal.SIGKILL
