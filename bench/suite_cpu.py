"""Where the suite's CPU goes, test by test (issue: a suite that verifies the whole house in 12 minutes).

    .venv/bin/python bench/suite_cpu.py [--top 30] [PYTEST ARGS...]

Runs pytest (the suite's own options, `make test`'s selection unless PYTEST ARGS say otherwise) with this module as
a plugin: each pytest worker runs in a cgroup of its own (cgroup v1's cpuacct, as root), and a test's CPU seconds are
its worker's cgroup's before its setup and after its teardown: the worker and every process it started, the drivers,
the brokers, a Spark cluster's JVMs and their executors, whoever reaps them. Without such a cgroup: the worker's own
(RUSAGE_SELF) and its reaped children's (RUSAGE_CHILDREN), which misses a JVM whose parent was killed first. A
module's fixture is paid by its first test. Processes in Docker containers are counted by neither.

Prints the tests by CPU seconds with their wall seconds, the total counted, the machine's CPU seconds over the run
(/proc/stat) and how much of both cores' time was idle. Numbers, not assertions.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OUT = "SUITE_CPU_OUT"  # the folder each worker writes its tests' numbers to
RUN = "SUITE_CPU_RUN"  # names this run's cgroups, removed once the suite is over
CPUACCT = Path("/sys/fs/cgroup/cpuacct")
_group: Path | None = None  # this worker's cgroup, when it could make one


def pytest_configure(config):
    global _group
    group = CPUACCT / f"suite-cpu-{os.environ[RUN]}-{os.getpid()}"
    try:
        group.mkdir()
        (group / "cgroup.procs").write_text(str(os.getpid()))
    except OSError:
        return
    _group = group


def pytest_unconfigure(config):
    if _group is not None:
        (CPUACCT / "cgroup.procs").write_text(str(os.getpid()))
        try:
            _group.rmdir()
        except OSError:  # a process of a test still in it: removed by main() once the suite is over
            pass


def _cpu_s() -> float:
    if _group is not None:
        return int((_group / "cpuacct.usage").read_text()) / 1e9
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """The plugin's hook: the test's CPU and wall seconds, setup to teardown, appended to this worker's file."""
    cpu, wall = _cpu_s(), time.monotonic()
    yield
    row = {"test": item.nodeid, "cpu_s": _cpu_s() - cpu, "wall_s": time.monotonic() - wall}
    with open(Path(os.environ[OUT]) / f"{os.getpid()}.jsonl", "a") as out:
        out.write(json.dumps(row) + "\n")


def _machine_ticks() -> tuple[int, int]:
    """(busy, idle) clock ticks of the whole machine so far."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:9]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, idle


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--top", type=int, default=30, help="how many tests to list (default 30)")
    args, pytest_args = parser.parse_known_args()
    ticks = os.sysconf("SC_CLK_TCK")
    with tempfile.TemporaryDirectory() as out:
        env = {
            **os.environ,
            OUT: out,
            RUN: str(os.getpid()),
            "PYTHONPATH": f"{ROOT / 'bench'}:{os.environ.get('PYTHONPATH', '')}",
        }
        busy0, idle0 = _machine_ticks()
        t0 = time.monotonic()
        code = subprocess.call(
            [sys.executable, "-m", "pytest", "-p", "suite_cpu", "-q", "--durations=0", *pytest_args],
            cwd=ROOT,
            env=env,
        )
        wall = time.monotonic() - t0
        for group in CPUACCT.glob(f"suite-cpu-{os.getpid()}-*"):
            try:
                group.rmdir()
            except OSError:  # a process still in it: say so rather than leave it unnoticed
                print(f"cgroup {group} still holds processes: {(group / 'cgroup.procs').read_text().split()}")
        busy1, idle1 = _machine_ticks()
        rows = [json.loads(line) for f in Path(out).glob("*.jsonl") for line in f.read_text().splitlines()]
    rows.sort(key=lambda r: -r["cpu_s"])
    total = sum(r["cpu_s"] for r in rows)
    print(f"\n{'cpu s':>8} {'wall s':>8}  test")
    for row in rows[: args.top]:
        print(f"{row['cpu_s']:8.1f} {row['wall_s']:8.1f}  {row['test']}")
    busy, idle = (busy1 - busy0) / ticks, (idle1 - idle0) / ticks
    print(
        f"\n{len(rows)} tests: {total:.0f} CPU s counted; pytest {wall:.0f} s; the machine {busy:.0f} CPU s busy, "
        f"{100 * idle / (busy + idle):.1f}% idle"
    )
    sys.exit(code)


if __name__ == "__main__":
    main()
