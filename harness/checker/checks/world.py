"""What each team's job was given in place of what it names (its world: harness/runner/world.py), and where it
checkpointed: the addresses relayed to the brokers, the paths bound to the run's folders, the config files
rendered, its setup steps; a job that gave its queries no checkpoint ran each start on a new temporary one, so
every restart began anew, and what it lost or replayed then is the finding. From the history, pipeline.json and
the run's checkpoint folders alone; said only of a run with a job given a world or checkpointing nowhere."""

from __future__ import annotations

from contract.applications import APPLICATION
from harness.checker.section import Section
from harness.checker.step import Context, Step
from harness.evidence.checkpoint import query_checkpoints
from harness.evidence.history import SETUP_RAN, WORLD_PREPARED
from harness.evidence.layout import RunLayout

HEADER = ("application", "addresses", "paths", "files", "setup", "checkpoint")
NO_CHECKPOINT = "none: Spark's temporary one at each start, so each restart began anew"


def _checkpoint(layout: RunLayout, name: str) -> str:
    queries = query_checkpoints(layout.checkpoints(name))
    if not queries:
        return NO_CHECKPOINT
    return ", ".join(str(q.relative_to(layout.root)) for q in queries)


def _row(name: str, prepared: dict | None, setups: list[dict], checkpoint: str) -> tuple:
    if prepared is None:
        return (name, "its own (no world)", None, None, None, checkpoint)
    addresses = ", ".join(f"{inside} -> {outside}" for inside, outside in prepared.get("routes", []))
    if prepared.get("master"):
        addresses += f", spark://{prepared['master']} -> a Spark master and worker of its own, in its world"
    paths = ", ".join(f"{named} -> {given}" for given, named in prepared.get("binds", []))
    files = ", ".join(prepared.get("files", {})) or "none"
    setup = ", ".join(f"{' '.join(s.get('command', []))}: exit {s.get('exit_code')}" for s in setups) or "none"
    return (name, addresses, paths or "none", files, setup, checkpoint)


def _section(context: Context) -> Section | None:
    evidence = context.evidence
    layout = RunLayout(evidence.root)
    prepared = {e.get("application"): e for e in evidence.history if e["event"] == WORLD_PREPARED}
    setups = [e for e in evidence.history if e["event"] == SETUP_RAN]
    rows = []
    for streamlet in evidence.streamlets:
        if streamlet.kind != APPLICATION:
            continue
        checkpoint = _checkpoint(layout, streamlet.name)
        if streamlet.name in prepared or checkpoint == NO_CHECKPOINT:
            mine = [s for s in setups if s.get("application") == streamlet.name]
            rows.append(_row(streamlet.name, prepared.get(streamlet.name), mine, checkpoint))
    if not rows:
        return None
    lines = (
        "what each job was given in place of what it names: the addresses it dials relayed to the run's brokers, "
        "the paths it names bound to the run's folders (its own folder and the machine's left as they were)",
    )
    return Section("The jobs' worlds", lines, HEADER, tuple(rows))


KIND = Step("world", section=_section)
