"""The harness's own process keeps its malloc arenas bounded however many fault threads a soak starts."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

CHILD = textwrap.dedent('''
    import json, sys, threading
    from harness.process.arenas import bound_malloc_arenas

    def arenas() -> int:
        """glibc's thread arenas: a 64 MB reservation, its used part read-write and the rest inaccessible."""
        maps = []
        for line in open("/proc/self/maps"):
            parts = line.split()
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            maps.append((lo, hi, parts[1], parts[5] if len(parts) > 5 else ""))
        return sum(1 for a, b in zip(maps, maps[1:]) if not a[3] and not b[3] and a[1] == b[0]
                   and (a[2], b[2]) == ("rw-p", "---p") and b[1] - a[0] == 64 << 20)

    bounded = bound_malloc_arenas(2) if sys.argv[1] == "bounded" else None
    alive = threading.Barrier(7)
    def work():
        kept = [bytes(200) for _ in range(20000)]  # every live thread allocates, as a fault's thread does
        alive.wait()
        alive.wait()
    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    alive.wait()
    count = arenas()
    alive.wait()
    for t in threads:
        t.join()
    print(json.dumps({"bounded": bounded, "arenas": count}))
''')


def child(mode: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, mode],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_six_live_threads_share_at_most_two_arenas_once_bounded():
    free, bounded = child("free"), child("bounded")
    assert free["arenas"] >= 3  # what glibc does unbounded: an arena per live thread that allocates
    assert bounded["bounded"] is True
    assert bounded["arenas"] <= 1  # the main arena is not in the count: at most one more
