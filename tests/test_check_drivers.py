"""The drivers check (harness/checker/checks/drivers.py), a check of one module: each streamlet's starts, kills,
ends and how its last driver ended, counted here from the history the test writes."""

from __future__ import annotations

from harness.checker.check import check_run
from tests.synthetic_run import T0, clean_flow, make_sent, write_run


def _event(n: int, event: str, name: str, **fields) -> dict:
    role = {"role": "driver", "streamlet": name} if event == "process_started" else {}
    return {"ts_ms": T0 + n, "event": event, "process": f"streamlet-{name}", "pid": 100 + n, **role, **fields}


def test_each_drivers_starts_kills_and_end_are_counted_from_the_history(tmp_path):
    history = [
        _event(0, "process_started", "ingress"),
        _event(1, "process_started", "processor"),
        _event(2, "process_started", "egress"),
        _event(3, "process_killed", "processor", signal="SIGKILL"),
        _event(4, "process_started", "processor"),
        _event(5, "process_killed", "processor", signal="SIGKILL"),
        _event(6, "process_started", "processor"),
        _event(7, "process_exited", "egress", exit_code=1),
        _event(8, "process_stopped", "ingress", signal="SIGTERM"),
        _event(9, "process_stopped", "processor", signal="SIGTERM"),
        {"ts_ms": T0 + 10, "event": "process_started", "process": "generator", "pid": 7, "role": "generator"},
    ]
    sent = make_sent(2, 10)
    report = check_run(write_run(tmp_path / "run", sent, clean_flow(sent), history=history))

    section = report.sections["drivers"]
    assert {row[0]: row[1:] for row in section.rows} == {
        "ingress": (1, 0, 0, 1, "stopped"),
        "processor": (3, 2, 0, 1, "stopped"),
        "egress": (1, 0, 1, 0, "ended by itself"),
    }
    assert section.lines == ("2 restart(s) in all",)


def test_a_driver_restarted_and_never_seen_to_end_is_unknown_not_stopped(tmp_path):
    history = [
        _event(0, "process_started", "egress"),
        _event(1, "process_killed", "egress", signal="SIGKILL"),
        _event(2, "process_started", "egress"),
    ]
    sent = make_sent(2, 10)
    report = check_run(write_run(tmp_path / "run", sent, clean_flow(sent), history=history))
    rows = {row[0]: row[1:] for row in report.sections["drivers"].rows}
    assert rows["egress"] == (2, 1, 0, 0, None)
