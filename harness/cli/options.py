"""Options several commands share, and where a run goes by default."""

from __future__ import annotations

import re
import time
from pathlib import Path

import click

from harness.runner.evidence_budget import MARK


def default_run_dir(name: str) -> Path:
    return Path("reports") / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"


allow_unknown_option = click.option(
    "--allow-unknown",
    is_flag=True,
    help="Exit 0 when no expectation failed but some could not be measured (unknown is never a pass otherwise).",
)


class UntilType(click.ParamType):
    """--until: a clock time (06:30, the next one to come) or a span from now (90m, 8h, 1h30m, 45s)."""

    name = "WHEN"

    def convert(self, value, param, ctx):
        if isinstance(value, float):
            return value
        text = str(value).strip().lower()
        now = time.time()
        clock = re.fullmatch(r"(\d{1,2}):(\d{2})", text)
        if clock and int(clock[1]) < 24 and int(clock[2]) < 60:
            today = time.localtime(now)
            at = time.mktime((today.tm_year, today.tm_mon, today.tm_mday, int(clock[1]), int(clock[2]), 0, 0, 0, -1))
            return at if at > now else at + 86400
        span = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", text)
        if span and any(span.groups()):
            hours, minutes, seconds = (int(g or 0) for g in span.groups())
            return now + hours * 3600 + minutes * 60 + seconds
        self.fail(f"{value!r} is neither a clock time (HH:MM) nor a span like 90m, 8h or 1h30m", param, ctx)


class SizeType(click.ParamType):
    """--evidence-budget: a size (500MB, 2GB, 1.5GiB)."""

    name = "SIZE"

    def convert(self, value, param, ctx):
        from harness.scenario.declared import MIN_EVIDENCE_BUDGET
        from harness.scenario.fields import parse_size

        try:
            size = parse_size(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)
        if size < MIN_EVIDENCE_BUDGET:
            self.fail(f"expected at least {MIN_EVIDENCE_BUDGET:,} bytes, got {size:,}", param, ctx)
        return size


MIN_JUDGE_EVERY_S = 5.0  # a check of a run takes seconds itself


def _at_least(value: float | None, least: float, param, ctx) -> float | None:
    """An interval of at least `least` seconds, or 0 (never), or None (the default)."""
    if value and value < least:
        raise click.BadParameter(f"expected 0 (never) or at least {least:g} seconds, got {value:g}", ctx, param)
    return value


run_options = [
    click.argument("scenario_file", type=click.Path(path_type=Path)),
    click.option(
        "--out",
        "run_dir",
        type=click.Path(path_type=Path),
        default=None,
        help="Run directory [reports/NAME-TIMESTAMP].",
    ),
    click.option(
        "--duration",
        type=click.FloatRange(min=0, min_open=True),
        default=None,
        help="Seconds of workload (overrides the scenario; one too short for a planned fault is refused).",
    ),
    click.option(
        "--seed", type=int, default=None, help="Seed of the workload and the fault schedule (overrides the scenario)."
    ),
    click.option(
        "--repeat",
        type=click.IntRange(min=1),
        default=1,
        show_default=True,
        help="Run the scenario this many times in a row, each with the next seed; --out is then the folder of the "
        "runs.",
    ),
    click.option(
        "--until",
        type=UntilType(),
        default=None,
        help="Keep repeating until WHEN (06:30, or a span: 90m, 8h); no run starts after it.",
    ),
    click.option(
        "--bootstrap-servers",
        default=None,
        metavar="HOST:PORT,...",
        help="Run against a Kafka cluster you run instead of the scenario's (only topics named harness.RUN.* "
        "are created and used there).",
    ),
    click.option(
        "--evidence-budget",
        type=SizeType(),
        default=None,
        help=f"End the workload early once the run directory's evidence (all but the brokers' data) reaches {MARK:.0%} "
        "of SIZE (500MB, 2GB); the report then says the run was cut short (overrides the scenario's evidence.budget).",
    ),
    click.option(
        "--judge-every",
        type=click.FloatRange(min=0),
        default=None,
        metavar="SECONDS",
        callback=lambda ctx, param, value: _at_least(value, MIN_JUDGE_EVERY_S, param, ctx),
        help=f"Judge the run's periods so far every SECONDS (at least {MIN_JUDGE_EVERY_S:g}) while it runs, into "
        "judged.jsonl (0: never) [a run of 12 minutes or more: every period].",
    ),
    allow_unknown_option,
    click.option(
        "--dry-run",
        is_flag=True,
        help="Check the scenario and the code it names, print what the run would do, and start nothing.",
    ),
]


def with_run_options(command):
    for option in reversed(run_options):
        command = option(command)
    return command
