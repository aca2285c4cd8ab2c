"""An application's world in a run (the scenario's `world`, harness/scenario/world.py): the spec harness.world.enter
reads, made from the run (its brokers' addresses, its folders, its placeholders), and the setup steps run once in
it before the job's first start.

- The brokers: a relay inside on every address a broker advertises to the job (its link's proxy when a network
  fault targets it), and on each address the job names, which reaches the first; the names it uses resolve to
  loopback (its own hosts file).
- Its folder: overlaid, so what the job writes there lands in the run directory (world/<app>/folder/upper); a
  config file it reads there is rendered into that layer, the team's file beneath it unchanged.
- Its paths: each bound to the run folder the scenario gives it (or one of the world's own); an absolute one that
  does not exist gets a mount point for as long as runs use it (harness/world/mountpoints.py).
- Its schema registry: where its code names one, a relay on that address to the run's (harness/runner/registry.py).
- Its master: where its code names one (spark://NAME:PORT), a Spark master there and a worker start in its world
  at each start, before it (world/<app>/spark: their logs, its executors'); its executors dial what it dials.
"""

from __future__ import annotations

import json
import socket
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from harness.errors import HarnessError
from harness.evidence.history import SETUP_RAN, WORLD_PREPARED
from harness.scenario.placeholders import fill
from harness.scenario.world import named_hosts
from harness.spark.standalone import in_a_world

if TYPE_CHECKING:
    from harness.runner.run_parts import ApplicationRun

SETUP_S = 900.0  # a setup step (tables made, a model trained, a cache seeded) is given this long


def _slug(path: str) -> str:
    return path.strip("/").replace("/", "_") or "root"


def _routes(run: ApplicationRun, name: str, world: dict) -> list[list[str]]:
    """[listen inside, upstream outside]: each advertised address as it is, then each address the job names."""
    servers = run.client_access(name).bootstrap_servers.split(",")
    routes = [[s, s] for s in servers]
    taken = {s.rpartition(":")[2] for s in servers}  # a broker's own port inside stays its own
    for text in world["kafka"]:
        host, _, port = text.rpartition(":")
        if port not in taken:
            taken.add(port)
            routes.append([f"127.0.0.1:{port}", servers[0]])
            if host in ("localhost", "[::1]", "::1") and socket.has_ipv6:
                routes.append([f"[::1]:{port}", servers[0]])  # localhost may resolve to ::1 first
    if world["registry"]:
        routes.append([f"127.0.0.1:{world['registry'].rpartition(':')[2]}", run.registry.address])
    return routes


def _hosts(folder: Path, world: dict) -> str:
    """A hosts file in which the job's names for the brokers, its master and its registry (and the machine's own
    name) are loopback."""
    named = [*world["kafka"], *(world[k] for k in ("master", "registry") if world[k])]
    names = named_hosts(named) + [socket.gethostname()]
    hosts = folder / "hosts"
    hosts.write_text(f"127.0.0.1\tlocalhost {' '.join(names)}\n::1\tlocalhost ip6-localhost ip6-loopback\n")
    return str(hosts)


def _inside(path: str, folder: str) -> str | None:
    """`path` relative to `folder` where it is in it."""
    p, f = Path(path), Path(folder)
    return str(p.relative_to(f)) if p.is_relative_to(f) else None


def world_spec(run: ApplicationRun, name: str, values: dict[str, str], argv: list[str]) -> dict:
    """What harness.world.enter does for the application `name` (its settings' world) around `argv`."""
    settings = run.scenario.blueprint.streamlets[name].settings
    world, cwd, root = settings["world"], settings["cwd"], run.layout.world(name)
    if Path(root).is_relative_to(cwd):
        raise HarnessError(
            f"applications.{name}.world: the run directory {run.layout.root} is inside the job's "
            f"folder {cwd}, which the job's world lays over: keep runs elsewhere (--out)"
        )
    upper, work = root / "folder" / "upper", root / "folder" / "work"
    for folder in (upper, work):
        folder.mkdir(parents=True, exist_ok=True)
    binds = []
    for path, given in world["paths"].items():
        source = Path(fill(given, values)) if given else root / "paths" / _slug(path)
        source.mkdir(parents=True, exist_ok=True)
        if _inside(path, cwd) is None:
            run.mount_points.ensure(path, folder=True)
        binds.append([str(source), path])
    for path, template in world["files"].items():
        text = fill(Path(template).read_text(), values)
        relative = _inside(path, cwd)
        rendered = upper / relative if relative is not None else root / "files" / _slug(path)
        rendered.parent.mkdir(parents=True, exist_ok=True)
        rendered.write_text(text)
        if relative is None:
            run.mount_points.ensure(path, folder=False)
            binds.append([str(rendered), path])
    return {
        "routes": _routes(run, name, world),
        "hosts": _hosts(root, world),
        "overlays": [{"folder": cwd, "upper": str(upper), "work": str(work)}],
        "binds": binds,
        "cluster": in_a_world(root / "spark", world["master"]) if world["master"] else None,
        "argv": argv,
    }


def in_world(run: ApplicationRun, name: str, values: dict[str, str], argv: list[str], purpose: str) -> list[str]:
    """`argv` run in the application's world: its spec written to the run directory (world/<app>/<purpose>.json),
    where a reader sees what the job was given in place of what it names; the first one is in the history."""
    spec = world_spec(run, name, values, argv)
    path = run.layout.world(name) / f"{purpose}.json"
    first = not any(run.layout.world(name).glob("*.json"))
    path.write_text(json.dumps(spec, indent=2))
    if first:
        shown = {k: spec[k] for k in ("routes", "binds")} | {"folder": spec["overlays"][0]["folder"]}
        world = run.scenario.blueprint.streamlets[name].settings["world"]
        run.history.record(WORLD_PREPARED, application=name, **shown, files=world["files"], master=world["master"])
    return [sys.executable, "-m", "harness.world.enter", str(path)]


def run_setup(run: ApplicationRun, name: str, values: dict[str, str], env: dict[str, str], python: str) -> None:
    """The application's setup steps, once (a later start finds them done), each in its world; a step that fails
    stops the run before its workload, naming it and its log."""
    settings = run.scenario.blueprint.streamlets[name].settings
    done = run.layout.world(name) / "setup.done"
    if done.exists() or not settings["world"]["setup"]:
        return
    for i, command in enumerate(settings["world"]["setup"]):
        argv = [python if command[0] == "python" else command[0], *(fill(a, values) for a in command[1:])]
        log = run.layout.log(f"setup-{name}-{i}")
        t0 = time.monotonic()
        proc = run.supervisor.start(
            f"setup-{name}-{i}", in_world(run, name, values, argv, f"setup-{i}"), log, env=env, cwd=settings["cwd"]
        )
        code = proc.wait_exit(timeout=SETUP_S)
        if code is None:
            proc.kill()
        took = round(time.monotonic() - t0, 3)
        run.history.record(SETUP_RAN, application=name, step=i, command=command, exit_code=code, took_s=took)
        if code != 0:
            why = f"did not end within {SETUP_S:.0f}s" if code is None else f"exited {code}"
            raise HarnessError(f"applications.{name}.world.setup[{i}]: {' '.join(command)} {why} (see {log})")
    done.parent.mkdir(parents=True, exist_ok=True)
    done.touch()
