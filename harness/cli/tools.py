"""The commands around runs: the shipped scenarios and fault kinds, cleaning up after a killed run, compacting a
run's evidence, the demo (what a machine needs, its images, jars and Spark environments: cli/setup.py)."""

from __future__ import annotations

import sys
import textwrap
import time
from pathlib import Path

import click

from contract.applications import APPLICATION
from harness.cli.app import main
from harness.cli.options import default_run_dir
from harness.errors import HarnessError
from harness.scenario.shipped import SCENARIOS_DIR


@main.command()
@click.option(
    "--out",
    "workdir",
    type=click.Path(path_type=Path),
    default=None,
    help="Where to keep the demo's files, as `run --out` [reports/demo-TIMESTAMP].",
)
@click.option(
    "--records", type=click.IntRange(1, 1_000_000), default=1000, show_default=True, help="Records per phase."
)
@click.option(
    "--bootstrap-servers",
    default=None,
    metavar="HOST:PORT,...",
    help="Use this Kafka cluster instead of starting one; only new harness-demo-* topics are created.",
)
def demo(workdir: Path | None, records: int, bootstrap_servers: str | None):
    """Start Kafka, run a checkpointed Spark query Kafka -> Kafka, stop and restart it, report.

    \b
    Examples:
      harness demo --records 5000
      harness demo --bootstrap-servers localhost:19092    # a cluster you run
    """
    from harness.demo import run_demo

    workdir = workdir or default_run_dir("demo")
    t0 = time.monotonic()
    result = run_demo(
        workdir,
        records=records,
        bootstrap=bootstrap_servers,
        say=lambda m: click.echo(f"[{time.monotonic() - t0:6.1f}s] {m}"),
    )
    click.echo(
        f"result: {result.sent} records sent, {result.received} in {result.sink}, "
        f"{result.lost} lost, {result.duplicated} duplicated; no process left running. Files: {workdir}"
    )
    if result.lost or result.duplicated:
        sys.exit(1)


@main.command("scenarios")
@click.argument("folder", type=click.Path(path_type=Path), default=SCENARIOS_DIR)
def scenarios_command(folder: Path):
    """List the scenario files of FOLDER [the shipped ones] with their descriptions (each one validated).

    \b
    Examples:
      harness scenarios
      harness scenarios my-project/scenarios
    """
    from harness.scenario import load_scenario

    files = sorted(Path(folder).glob("*.yaml"))
    if not files:
        raise HarnessError(f"{folder}: no scenario files (*.yaml)")
    width = max(len(f.stem) for f in files)
    for path in files:
        scenario = load_scenario(path)
        faults = (
            ", ".join(
                sorted({r.kind for r in scenario.faults})
                + ([f"a storm of {scenario.storm.faults}"] if scenario.storm else [])
            )
            or "no faults"
        )
        e = scenario.expectations
        expected = f"exactly {e['verdict']}" if "verdict" in e else e.get("end_to_end") or "see expectations"
        click.echo(f"{path.stem:<{width}}  {scenario.workload.duration_s:>6g}s  {expected:<24}  [{faults}]")
        click.echo(
            textwrap.fill(" ".join(scenario.description.split()), 100, initial_indent="    ", subsequent_indent="    ")
        )


@main.command("init")
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path), default=Path("."))
def init_command(folder: Path):
    """Start a project in FOLDER [the current one]: a scenario for your pipeline written as streamlets
    (scenarios/pipeline.yaml), one for your job run unchanged (scenarios/job.yaml, with job/job.py to replace by
    yours), CI recipes for GitHub Actions and GitLab CI with the script installing the harness pinned
    (ci/install-harness.sh), and a .gitignore for what runs and recipes leave. Nothing is overwritten.

    \b
    Examples:
      harness init my-project && cd my-project
      harness jars                 # once: the Kafka and Spark jars, with Maven, into the cache
      harness validate scenarios/ && harness gate scenarios/
    """
    from harness.scaffold import scaffold

    for path in scaffold(folder):
        click.echo(f"wrote {path}")
    scenarios = folder / "scenarios"
    click.echo(f"next: harness jars; harness validate {scenarios}; harness gate {scenarios} (harness docs ci)")


@main.command("validate")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
def validate_command(paths: tuple[Path, ...]):
    """Check scenario files (a folder: its *.yaml; a name: the shipped scenario) and the code they name (user
    streamlets, application entry points, fault kinds), starting nothing. One line per file; exit 2 if any is bad.

    \b
    Examples:
      harness validate my-pipeline.yaml
      harness validate scenarios/ examples/enrich-kafka/scenario.yaml
      harness validate smoke
    """
    from harness.scenario import load_scenario
    from harness.scenario.job_code import notes
    from harness.scenario.shipped import scenario_files

    bad = 0
    for path in scenario_files(list(paths)):
        try:
            scenario = load_scenario(path)
        except HarnessError as exc:
            bad += 1
            click.echo(f"bad  {exc}")
            continue
        parts = len(scenario.blueprint.streamlets)
        click.echo(f"ok   {path}: {scenario.name} ({parts} streamlet(s), {len(scenario.faults)} fault rule(s))")
        apps = {n: i.settings for n, i in scenario.blueprint.streamlets.items() if i.kind == APPLICATION}
        for line in notes(apps):
            click.echo(f"     note {line}")
    if bad:
        raise HarnessError(f"{bad} scenario file(s) are not valid")


@main.command("docs")
@click.argument("topic", required=False)
def docs_command(topic: str | None):
    """The reference pages, as shipped with this harness: without TOPIC, their list; with it, that page.

    \b
    Examples:
      harness docs                 every topic, with its title
      harness docs ci              the harness in CI: the recipes, pinned installs, exit codes
      harness docs applications    testing the job you already have
    """
    from harness.paths import shipped

    pages = {path.stem: path for path in sorted(shipped("docs").glob("*.md"))}
    if topic is None:
        width = max(map(len, pages))
        for name, path in pages.items():
            title = next((line for line in path.read_text().splitlines() if line.startswith("# ")), "# ")[2:]
            click.echo(f"{name:<{width}}  {title}")
        return
    page = pages.get(topic.removesuffix(".md").removeprefix("docs/"))
    if page is None:
        raise HarnessError(f"docs: no topic {topic!r}; the topics: {', '.join(pages)}")
    click.echo_via_pager(page.read_text().rstrip("\n"))  # the pager adds the last newline


@main.command("faults")
def faults_command():
    """List the built-in fault kinds: target, parameters with their defaults, what each does.

    A kind of your own is named package.module:attr in a scenario (docs/faults.md).
    """
    from harness.faults import TARGETS, builtin_fault_kinds
    from harness.faults.kind import REQUIRED

    for kind in builtin_fault_kinds().values():
        params = ", ".join(
            f"{name}"
            + ("" if p.default is REQUIRED else f"={p.default:g}" if isinstance(p.default, float) else f"={p.default}")
            + (f" ({'|'.join(p.choices)})" if p.choices else "")
            for name, p in kind.params.items()
        )
        timing = "timed" if kind.scheduled else "whole run"
        click.echo(f"{kind.name:<18} {TARGETS[kind.target]} ({timing})")
        click.echo(f"    {params or 'no parameters'}")
        click.echo(textwrap.fill(kind.help, 100, initial_indent="    ", subsequent_indent="    "))


@main.command("clean")
@click.argument("run_dir", type=click.Path(path_type=Path))
def clean_command(run_dir: Path):
    """Stop whatever the run in RUN_DIR left running, and undo what its faults left undone (after the harness
    itself was killed).

    Anything frozen is thawed first (a paused broker). Only processes recorded
    in the run's pid files are stopped, and only if they are still the same
    processes (pid and start time); broker containers only by the labels naming
    this run's cluster (their logs kept). Broker containers of a cluster you
    run are left running, as the run found them; what a fault left undone on
    such a cluster is named. The evidence stays.

    \b
    Example:
      harness clean reports/smoke-20261121-101500
    """
    from harness.runner.clean import clean_run

    lines = clean_run(run_dir)
    click.echo("\n".join(lines) if lines else "nothing was running")


@main.command("compact")
@click.argument("run_dir", type=click.Path(path_type=Path))
def compact_command(run_dir: Path):
    """Rewrite RUN_DIR's acknowledgement log (acks.csv), topic recordings (topics/*.jsonl), egress audit tables and
    exported egress states in the columnar form: a fraction of the size, read without parsing. The report stays the
    same; `evidence: {recordings: columnar}` in a scenario writes so from the start.

    A file with a damaged or cut line stays as it is (nothing is lost).

    \b
    Example:
      harness compact reports/soak-20261125-220000
    """
    from harness.evidence.compact import compact_run

    for c in compact_run(run_dir):
        if c.kept_because:
            click.echo(f"{c.name}: kept ({c.kept_because})")
        else:
            before, after = c.bytes_before / 1e6, c.bytes_after / 1e6
            click.echo(f"{c.name}: {c.records:,} records, {before:,.1f} MB -> {after:,.1f} MB")
