"""Process supervision by pid and start time.

Every process the harness starts gets its own session (and so its own process
group), its output in a log file, and a pid file holding (pid, start time).
Stopping a process signals exactly the members of that session, after
checking the start time, so a recycled pid is never hit and nothing is ever
killed by name. A later `harness` invocation can stop processes an earlier,
dead one started, from the pid files alone.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Mapping, Sequence

from harness.errors import HarnessError
from harness.files import write_atomically


@dataclass(frozen=True)
class ProcessRecord:
    """What identifies one started process across harness invocations."""

    name: str
    pid: int
    start_ticks: int  # field 22 of /proc/<pid>/stat: pid plus this is unique
    argv: tuple[str, ...]
    log_path: str

    def save(self, pid_dir: Path) -> Path:
        pid_dir.mkdir(parents=True, exist_ok=True)
        return write_atomically(pid_dir / f"{self.name}.json", json.dumps(asdict(self)))

    @classmethod
    def load(cls, path: Path) -> "ProcessRecord":
        try:
            data = json.loads(path.read_text())
            return cls(
                name=data["name"],
                pid=int(data["pid"]),
                start_ticks=int(data["start_ticks"]),
                argv=tuple(data["argv"]),
                log_path=data["log_path"],
            )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise HarnessError(f"{path}: unreadable pid file ({exc})") from None


# Every process started by this Python process, for leak checks (tests, exit paths).
STARTED_HERE: list[ProcessRecord] = []


@dataclass(frozen=True)
class _Stat:
    state: str
    session: int
    start_ticks: int


def _stat(pid: int, thread: int | None = None) -> _Stat | None:
    """A process's /proc stat, or one of its threads' (the process's state is only its main thread's)."""
    try:
        raw = Path(f"/proc/{pid}/stat" if thread is None else f"/proc/{pid}/task/{thread}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # The command name (field 2) may contain spaces and parentheses: split after the last ')'.
    fields = raw[raw.rindex(")") + 2 :].split()
    return _Stat(state=fields[0], session=int(fields[3]), start_ticks=int(fields[19]))


def start_ticks_of(pid: int) -> int | None:
    st = _stat(pid)
    return st.start_ticks if st else None


def session_members(record: ProcessRecord) -> list[int]:
    """Live (non-zombie) pids in the session the recorded process leads.

    Linux does not hand out a pid again while a session or group still uses it
    as its id, so if a process with the recorded pid runs but started at
    another time, our session is gone entirely and that process is a stranger.
    """
    leader = _stat(record.pid)
    if leader is not None and leader.start_ticks != record.start_ticks:
        return []
    members = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        st = _stat(int(entry.name))
        if st and st.session == record.pid and st.state != "Z":
            members.append(int(entry.name))
    return members


def _threads_stopped(pid: int) -> bool:
    """No thread of the process runs (each stopped, or already gone)."""
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return True
    return all((st := _stat(pid, int(t))) is None or st.state in "TtZX" for t in threads)


def _signal_members(record: ProcessRecord, sig: int) -> list[int]:
    """Send `sig` to every live process of the session; returns the pids it reached."""
    sent = []
    for pid in session_members(record):
        try:
            os.kill(pid, sig)
            sent.append(pid)
        except ProcessLookupError:
            pass
    return sent


def stop_recorded(record: ProcessRecord, timeout: float = 15.0, sig: int = signal.SIGTERM) -> bool:
    """Stop every process of the recorded session: `sig`, then SIGKILL after `timeout`.

    Returns True if anything was still running. Safe to call on a record whose
    processes are long gone.
    """
    if not session_members(record):
        return False
    _ask_to_stop(record, sig)
    if not _wait_gone(record, timeout):
        _force_kill(record)
    return True


def _ask_to_stop(record: ProcessRecord, sig: int) -> None:
    """Send `sig` to the leader, which shuts its own children down (a PySpark
    driver stops its queries and its JVM); only a leaderless session gets it
    on every member. Paused (SIGSTOP) processes are continued first, since they
    cannot act on a signal while stopped."""
    _signal_members(record, signal.SIGCONT)
    st = _stat(record.pid)
    if st and st.start_ticks == record.start_ticks and st.state != "Z":
        try:
            os.kill(record.pid, sig)
            return
        except ProcessLookupError:
            pass
    _signal_members(record, sig)


def _force_kill(record: ProcessRecord) -> None:
    _signal_members(record, signal.SIGKILL)
    if not _wait_gone(record, 10.0):
        raise HarnessError(f"process {record.name} (pid {record.pid}) survived SIGKILL")


def _wait_gone(record: ProcessRecord, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while session_members(record):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


class ManagedProcess:
    """One started process (and its children): signal, stop, kill, pause, resume."""

    def __init__(self, record: ProcessRecord, popen: subprocess.Popen | None = None):
        self.record = record
        self._popen = popen

    @property
    def name(self) -> str:
        return self.record.name

    @property
    def pid(self) -> int:
        return self.record.pid

    def _reap(self) -> None:
        if self._popen is not None:
            self._popen.poll()

    @property
    def returncode(self) -> int | None:
        """Exit code (negative signal number when killed); None while running or if unknown."""
        if self._popen is None:
            return None
        return self._popen.poll()

    def running(self) -> bool:
        """Any process of this session is still running."""
        self._reap()
        leader = _stat(self.record.pid)
        if leader is not None and leader.start_ticks == self.record.start_ticks and leader.state != "Z":
            # The session's leader itself runs: no need to read every process's stat to find the others (a run
            # asks this of each driver several times a second: the scan was an eighth of the harness's own CPU).
            return True
        return bool(session_members(self.record))

    def is_paused(self) -> bool:
        """Every thread of every process of the session is stopped: nothing in it can act any more."""
        st = _stat(self.record.pid)
        if not st or st.start_ticks != self.record.start_ticks or st.state != "T":
            return False
        return all(_threads_stopped(pid) for pid in session_members(self.record))

    def signal(self, sig: int) -> list[int]:
        """Send `sig` to every process of the session; returns the pids it reached."""
        self._reap()
        return _signal_members(self.record, sig)

    def ask_to_stop(self) -> None:
        """SIGTERM to the leader, as `stop` sends it, without waiting."""
        _ask_to_stop(self.record, signal.SIGTERM)

    def stop(self, timeout: float = 15.0, asked: bool = False) -> int | None:
        """SIGTERM to the leader, wait up to `timeout` for the whole session, then SIGKILL. `asked`: `ask_to_stop`
        sent the SIGTERM already; no second one, which arriving while Python shuts down (its handlers reset to the
        default) would end a driver stopping cleanly with -15.

        Returns the exit code when known."""
        if not asked:
            stop_recorded(self.record, timeout=timeout)
        elif not _wait_gone(self.record, timeout):
            _force_kill(self.record)
        return self.wait_exit()

    def kill(self) -> int | None:
        """SIGKILL the whole session at once: the crash a fault test wants."""
        self._reap()
        _force_kill(self.record)
        return self.wait_exit()

    def pause(self, timeout: float = 10.0) -> None:
        """SIGSTOP the session; returns once all of it is really stopped (the kernel stops each thread of a
        large JVM as it next runs: under load some still run for a moment). Only the processes it stopped are
        watched while they stop; then the session is looked at once more, and one started meanwhile (a Python
        worker forked as the signal went out) is stopped too."""
        deadline = time.monotonic() + timeout
        while True:
            stopped = self.signal(signal.SIGSTOP)
            while not all(_threads_stopped(pid) for pid in stopped) and time.monotonic() < deadline:
                time.sleep(0.01)
            if self.is_paused() or time.monotonic() >= deadline:
                return

    def resume(self) -> None:
        self.signal(signal.SIGCONT)

    def wait_exit(self, timeout: float = 10.0) -> int | None:
        if self._popen is None:
            return None
        try:
            return self._popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return None


class Supervisor:
    """Starts processes and guarantees they are stopped when the `with` block ends.

    Pid files go to `pid_dir`, so `stop_all_recorded(pid_dir)` can finish the
    job from another process if this one is SIGKILLed.
    """

    def __init__(self, pid_dir: Path):
        self.pid_dir = Path(pid_dir)
        self._procs: dict[str, ManagedProcess] = {}
        self._closed = False  # set by close(): a start racing it (a fault's restart thread) is refused

    def start(
        self,
        name: str,
        argv: Sequence[str],
        log_path: Path,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> ManagedProcess:
        if self._closed:
            raise HarnessError(f"cannot start {name}: its supervisor is closed")
        previous = self._procs.get(name)
        if previous is not None and previous.running():
            raise HarnessError(f"process {name} is already running (pid {previous.pid})")
        log_path = Path(log_path)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "ab") as log:
            try:
                popen = subprocess.Popen(
                    list(argv),
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                    env=dict(env) if env is not None else None,
                    cwd=cwd,
                )
            except OSError as exc:
                raise HarnessError(f"cannot start {name} ({argv[0]}): {exc.strerror}") from None
        ticks = start_ticks_of(popen.pid)
        if ticks is None:  # exited before we could look: it cannot be running, reap it
            popen.wait()
            ticks = 0
        record = ProcessRecord(name, popen.pid, ticks, tuple(argv), str(log_path))
        record.save(self.pid_dir)
        STARTED_HERE.append(record)
        proc = ManagedProcess(record, popen)
        self._procs[name] = proc
        return proc

    def set_aside(self, name: str, new_name: str) -> ManagedProcess:
        """Track the running process `name` as `new_name` (its pid file renamed), so another may start as `name`
        while it still runs (a zombie driver beside its successor); it is stopped with the rest all the same."""
        proc = self._procs.pop(name)
        record = ProcessRecord(
            new_name, proc.record.pid, proc.record.start_ticks, proc.record.argv, proc.record.log_path
        )
        record.save(self.pid_dir)
        (self.pid_dir / f"{name}.json").unlink(missing_ok=True)
        aside = ManagedProcess(record, proc._popen)
        self._procs[new_name] = aside
        return aside

    def adopt(self, proc: ManagedProcess) -> None:
        """Track a process started elsewhere (e.g. by an earlier `cluster up`)."""
        self._procs[proc.name] = proc

    def processes(self) -> list[ManagedProcess]:
        return list(self._procs.values())

    def stop_all(self, timeout: float = 15.0) -> None:
        """Stop every tracked process: SIGTERM to all together, SIGKILL to survivors."""
        procs = list(self._procs.values())
        stop_many([p.record for p in procs], timeout=timeout)
        for proc in procs:
            proc.wait_exit(1.0)

    def close(self, timeout: float = 15.0) -> None:
        """Stop everything and start nothing more (a thread still restarting something gets an error)."""
        self._closed = True
        self.stop_all(timeout=timeout)

    def __enter__(self) -> "Supervisor":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def recorded_processes(pid_dir: Path) -> list[ProcessRecord]:
    pid_dir = Path(pid_dir)
    if not pid_dir.is_dir():
        return []
    return [ProcessRecord.load(p) for p in sorted(pid_dir.glob("*.json"))]


def live_recorded(pid_dirs: list[Path]) -> list[ProcessRecord]:
    """The processes the pid files in these folders name that are still running (unreadable pid files skipped)."""
    live = []
    for pid_dir in pid_dirs:
        for path in sorted(Path(pid_dir).glob("*.json")) if Path(pid_dir).is_dir() else []:
            try:
                record = ProcessRecord.load(path)
            except HarnessError:
                continue
            if session_members(record):
                live.append(record)
    return live


def stop_all_recorded(pid_dir: Path, timeout: float = 15.0) -> list[ProcessRecord]:
    """Stop, all at once, whatever the pid files in `pid_dir` name and is still running.

    SIGTERM goes to every process first, SIGKILL to the survivors after
    `timeout`. Returns the records that were still running.
    """
    running = [r for r in recorded_processes(pid_dir) if session_members(r)]
    stop_many(running, timeout=timeout)
    return running


def stop_many(records: list[ProcessRecord], timeout: float = 15.0, sig: int = signal.SIGTERM) -> None:
    """Like stop_recorded for several sessions, signalled together and waited on together."""
    for record in records:
        _ask_to_stop(record, sig)
    deadline = time.monotonic() + timeout
    for record in records:
        if not _wait_gone(record, max(0.0, deadline - time.monotonic())):
            _force_kill(record)
