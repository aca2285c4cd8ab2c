"""The process a job with a world of its own runs under: `python -m harness.world.enter SPEC.json`.

In order: a mount namespace of its own (private: nothing it mounts is seen outside), each overlaid folder (the
job's: what the job writes there lands in the run directory, the team's files beneath it untouched), each bind
(a run's folder or a rendered file where the job names it), the hosts file (the names the job uses for the brokers
resolve to loopback); then a network namespace of its own with its loopback up and a relay on every address the
job may dial (harness/world/relay.py); then the Spark master and worker the job names, where it names one
(harness/spark/standalone.py in_a_world: its executors run in this world too); then the job's command, as a child
in this process's session. A SIGKILL of the session kills them all; a SIGTERM is passed to the job, whose exit
code this process exits with, its cluster stopped after it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from harness.world import namespaces as ns
from harness.world.relay import Dialer, Route, address, listen


def _mounts(spec: dict) -> None:
    ns.enter(ns.CLONE_NEWNS)
    ns.mount("none", "/", None, ns.MS_REC | ns.MS_PRIVATE)
    for overlay in spec.get("overlays", []):
        folder = overlay["folder"]
        ns.mount(
            "overlay", folder, "overlay", 0, f"lowerdir={folder},upperdir={overlay['upper']},workdir={overlay['work']}"
        )
    for source, target in spec.get("binds", []):
        if not os.path.lexists(target):  # inside an overlaid folder: made in its upper layer, not the team's
            if Path(source).is_dir():
                os.makedirs(target)
            else:
                os.makedirs(os.path.dirname(target), exist_ok=True)
                Path(target).touch()
        ns.mount(source, target, None, ns.MS_BIND | ns.MS_REC)
    if spec.get("hosts"):
        ns.mount(spec["hosts"], "/etc/hosts", None, ns.MS_BIND)
    os.chdir(os.getcwd())  # the working folder as the job sees it: through its overlay


def _network(spec: dict) -> None:
    dialer = Dialer()  # started in the machine's network namespace, which it keeps
    ns.unshare(ns.CLONE_NEWNET)
    ns.loopback_up()
    listen([Route(address(listen_at), address(upstream)) for listen_at, upstream in spec["routes"]], dialer)


def _cluster(spec: dict | None) -> list[subprocess.Popen]:
    """Start each daemon of the job's own cluster in turn, each after the one before logs it is ready."""
    if not spec:
        return []
    env, started = {**os.environ, **spec["env"]}, []
    for daemon in spec["daemons"]:
        log = Path(daemon["log"])
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("ab") as out:
            at = out.tell()
            started.append(subprocess.Popen(daemon["argv"], stdout=out, stderr=subprocess.STDOUT, env=env))
        deadline = time.monotonic() + spec["timeout_s"]
        while daemon.get("ready") and daemon["ready"].encode() not in log.read_bytes()[at:]:
            ended = next((p for p in started if p.poll() is not None), None)
            if ended is not None or time.monotonic() > deadline:
                _stop(started)
                why = f"exited {ended.returncode}" if ended else f"not ready within {spec['timeout_s']:.0f}s"
                sys.exit(f"harness world: the job's Spark {log.stem} {why} (see {log})")
            time.sleep(0.2)
    return started


def _stop(daemons: list[subprocess.Popen]) -> None:
    for daemon in reversed(daemons):
        daemon.terminate()
    for daemon in daemons:
        try:
            daemon.wait(timeout=20)
        except subprocess.TimeoutExpired:
            daemon.kill()


def _run(argv: list[str], cluster: list[subprocess.Popen]) -> int:
    child = subprocess.Popen(argv)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda number, _: child.send_signal(number))
    code = child.wait()
    _stop(cluster)
    return 128 - code if code < 0 else code


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text())
    try:
        _mounts(spec)
        _network(spec)
    except OSError as exc:
        sys.exit(f"harness world: {exc.strerror or exc} (a job's world of its own needs Linux namespaces)")
    sys.stdout.flush()
    sys.exit(_run(spec["argv"], _cluster(spec.get("cluster"))))


if __name__ == "__main__":
    main()
