"""damage-checkpoint: SIGKILL a streamlet's driver between two batches, damage each of its queries' checkpoints as a
file system or an object store can, then start it again on what is left.

`damage` says what is lost: the query's `metadata` file (its id: Spark starts a new one); the newest `commits/N`
(`last-commit`: the batch was written, its commit not synced); the newest `offsets/N` and its commit
(`last-batch`); the newest `offsets/N` or `commits/N` cut to half its bytes (`cut-offsets`, `cut-commit`); or every
file of the newest version of each state store (`state-version`). A removed or cut file's checksum (`.N.crc`)
goes with it. Each file is kept whole under checkpoints-damaged/ first, and the history's checkpoint_damaged names
each, its size and what was done; a checkpoint with nothing to damage (a job not using it, no state) is said to be
so, the fault not played as declared. Which damage Spark notices (a query that fails to start), and what the rest
does to the outputs (a replayed batch, a new query id), the run's evidence shows.
"""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

from harness.errors import WaitTimeout
from harness.evidence.checkpoint import committed_batches, planned_batches
from harness.evidence.history import CHECKPOINT_DAMAGED
from harness.faults.drivers import restarted_after, running_driver, stop_driver
from harness.faults.kind import FaultKind, Param
from harness.faults.target import Pipeline
from harness.waiting import wait_for

MOMENT_TIMEOUT_S = 150.0  # as kill-driver's: a driver upstream may take over a minute to restart on a busy machine

DAMAGES = ("metadata", "last-commit", "last-batch", "cut-offsets", "cut-commit", "state-version")
STATE_FILE = re.compile(r"(\d+)\.(delta|snapshot|zip|changelog)")


def _newest(folder: Path) -> Path | None:
    numbered = [p for p in folder.glob("*") if p.name.isdigit()] if folder.is_dir() else []
    return max(numbered, key=lambda p: int(p.name), default=None)


def _with_checksum(path: Path) -> list[Path]:
    """A checkpoint file and, where Hadoop's local file system wrote one, its checksum file beside it."""
    crc = path.with_name(f".{path.name}.crc")
    return [path, crc] if crc.exists() else [path]


def _state_version(query: Path) -> list[Path]:
    """Every file of the newest version of the query's state stores (and their checksums)."""
    files = [p for p in (query / "state").rglob("*") if p.is_file() and STATE_FILE.fullmatch(p.name)]
    if not files:
        return []
    newest = max(int(STATE_FILE.fullmatch(p.name)[1]) for p in files)
    return [f for p in files if int(STATE_FILE.fullmatch(p.name)[1]) == newest for f in _with_checksum(p)]


def targets(query: Path, damage: str) -> tuple[list[Path], list[Path]]:
    """What `damage` does to one query's checkpoint: the files it removes, and those it cuts to half."""
    offsets, commits = _newest(query / "offsets"), _newest(query / "commits")
    if damage == "metadata":
        return (_with_checksum(query / "metadata") if (query / "metadata").exists() else []), []
    if damage == "last-commit":
        return (_with_checksum(commits) if commits else []), []
    if damage == "last-batch":
        same = commits is not None and offsets is not None and commits.name == offsets.name
        return [*(_with_checksum(offsets) if offsets else []), *(_with_checksum(commits) if same else [])], []
    if damage in ("cut-offsets", "cut-commit"):
        newest = offsets if damage == "cut-offsets" else commits
        return (_with_checksum(newest)[1:] if newest else []), ([newest] if newest else [])
    return _state_version(query), []


def damage_files(checkpoints: Path, kept: Path, root: Path, damage: str) -> list[dict]:
    """Damage every query's checkpoint under `checkpoints`, keeping each file whole under `kept` first: one entry
    per file (its path from the run directory `root`, its bytes, removed or cut to how many)."""
    done = []
    for query in sorted(p for p in checkpoints.glob("*") if p.is_dir()):
        removed, cut = targets(query, damage)
        for path in [*removed, *cut]:
            copy = kept / path.relative_to(checkpoints)
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, copy)
            size = path.stat().st_size
            entry = {"path": str(path.relative_to(root)), "bytes": size, "kept_as": str(copy.relative_to(root))}
            if path in cut:
                with path.open("r+b") as handle:
                    handle.truncate(size // 2)
                done.append({**entry, "action": "cut", "to_bytes": size // 2})
            else:
                path.unlink()
                done.append({**entry, "action": "removed"})
    return done


def _settled(checkpoints: Path) -> bool:
    """Whether every query under `checkpoints` has committed the newest batch it planned (none is in flight)."""
    queries = [p for p in checkpoints.glob("*") if p.is_dir()]
    ends = [(planned_batches(q)[-1:], committed_batches(q)[-1:]) for q in queries]
    return bool(ends) and all(planned and planned == committed for planned, committed in ends)


def _between_batches(run: Pipeline, streamlet: str, proc) -> dict:
    """Freeze the driver between two batches (each query's newest batch committed, none planned after it), so the
    newest files are a whole batch's; without such a moment in MOMENT_TIMEOUT_S, the history says so and the kill
    goes ahead frozen at whatever moment it is."""
    checkpoints = run.layout.checkpoints(streamlet)

    def frozen_settled() -> bool:
        if not _settled(checkpoints):
            return False
        proc.pause()
        if _settled(checkpoints):
            return True
        proc.resume()
        return False

    try:
        wait_for(frozen_settled, timeout=MOMENT_TIMEOUT_S, interval=0.02, what=f"{streamlet} between two batches")
        return {"at": "between-batches"}
    except WaitTimeout as exc:
        proc.pause()
        KIND.missed(run, streamlet, str(exc))
        return {}


def damage_checkpoint(run: Pipeline, streamlet: str, damage: str, restart_after_s: float) -> None:
    proc = running_driver(run, KIND.name, streamlet)
    moment = _between_batches(run, streamlet, proc)  # frozen from here: what it wrote, it wrote before the moment
    KIND.begun(run, streamlet, signal="SIGKILL", pid=proc.pid, damage=damage, **moment)
    with restarted_after(run, KIND, streamlet) as ended:
        stop_driver(run, streamlet, "SIGKILL")
        folder = run.layout.damaged_checkpoints(streamlet)
        kept = folder / str(len(list(folder.glob("*"))) + 1)
        files = damage_files(run.layout.checkpoints(streamlet), kept, run.layout.root, damage)
        run.history.record(CHECKPOINT_DAMAGED, streamlet=streamlet, damage=damage, files=files)
        if not files:
            KIND.missed(run, streamlet, f"its checkpoint has nothing a {damage} damage takes")
        ended.update(damaged_files=len(files))
        time.sleep(restart_after_s)


KIND = FaultKind(
    name="damage-checkpoint",
    target="streamlet",
    play=damage_checkpoint,
    restarts=True,
    solo="it removes files of a checkpoint another fault's restart may be reading",
    params={
        "damage": Param(str, "last-commit", choices=DAMAGES),
        "restart_after_s": Param((int, float), 2.0, minimum=0),
    },
    help="SIGKILL a streamlet's driver, damage its checkpoint (damage: metadata, last-commit, last-batch, "
    "cut-offsets, cut-commit, state-version; each file kept whole under checkpoints-damaged/), restart it",
)
