"""How a run that failed ended: the run's own error (run.json), then each process that ended by itself with an
error (a job that exited at start, a driver that crashed) and the last lines of its log, so that the cause can be
read from the report alone (in CI, where the run directory may be gone). No section for a run that did not fail."""

from __future__ import annotations

from harness.checker.section import Section
from harness.checker.step import Context, Step
from harness.evidence.history import PROCESS_EXITED
from harness.evidence.layout import RunLayout

TAIL_LINES = 15  # of a failed process's log: enough for a Python traceback's end or a JVM's exception


def _tail(layout: RunLayout, process: str) -> list[str]:
    try:
        text = layout.log(process).read_text(errors="replace")
    except OSError:
        return [f"    (no log: {layout.log(process).name} missing)"]
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    return [f"    {line[:300]}" for line in lines[-TAIL_LINES:]] or ["    (its log is empty)"]


def _section(context: Context) -> Section | None:
    run = context.evidence.run
    if run.get("status") != "failed":
        return None
    layout = RunLayout(context.evidence.root)
    lines = [f"the run failed: {run.get('error') or 'no error recorded'}"]
    ended = {}  # process -> how it ended, in the order they ended
    for event in context.evidence.history:
        if event["event"] == PROCESS_EXITED and event.get("exit_code") not in (0, None):
            ended[str(event.get("process"))] = f"exit code {event['exit_code']}"
    for name, how in (run.get("failed_streamlets") or {}).items():
        ended.setdefault(f"streamlet-{name}", str(how))
    for process, how in ended.items():
        lines.append(f"{process} ended by itself ({how}); the last lines of logs/{layout.log(process).name}:")
        lines += _tail(layout, process)
    return Section("How the run failed", tuple(lines))


KIND = Step("failure", section=_section)
