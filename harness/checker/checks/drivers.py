"""What happened to each streamlet's driver, from the history alone: how often it was started (the first start and
each restart), killed, ended by itself (its query failed, or it crashed), and stopped by the run at its end; and how
its last driver ended. A driver of a run that did not finish may still be running: its end is unknown."""

from __future__ import annotations

from collections import Counter

from harness.checker.section import Section
from harness.checker.step import Context, Step
from harness.evidence.history import PROCESS_EXITED, PROCESS_KILLED, PROCESS_STARTED, PROCESS_STOPPED

HEADER = ("streamlet", "starts", "killed", "ended by itself", "stopped at the end", "its last driver")
ENDS = {PROCESS_KILLED: "killed", PROCESS_EXITED: "ended by itself", PROCESS_STOPPED: "stopped"}


def _section(context: Context) -> Section:
    events = context.evidence.history
    started = [e for e in events if e["event"] == PROCESS_STARTED and e.get("role") == "driver"]
    starts = Counter(e.get("streamlet") for e in started)
    ends = {end: Counter() for end in ENDS}
    last: dict[str, str] = {}
    for event in events:
        process = str(event.get("process", ""))
        if event["event"] in ENDS and process.startswith("streamlet-"):
            name = process.removeprefix("streamlet-")
            ends[event["event"]][name] += 1
            last[name] = ENDS[event["event"]]
        elif event["event"] == PROCESS_STARTED and event.get("role") == "driver":
            last.pop(event.get("streamlet"), None)  # a restart: how it ends is to come
    rows = tuple(
        (
            name,
            starts[name],
            ends[PROCESS_KILLED][name],
            ends[PROCESS_EXITED][name],
            ends[PROCESS_STOPPED][name],
            last.get(name),  # None: still running, or its end not recorded
        )
        for name in context.evidence.progress  # the streamlets that run a driver (an output runs none)
    )
    restarted = sum(max(row[1] - 1, 0) for row in rows)
    return Section("Drivers", (f"{restarted} restart(s) in all",), HEADER, rows)


KIND = Step("drivers", section=_section)
