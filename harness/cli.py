"""The `harness` command line."""

from __future__ import annotations

import itertools
import os
import re
import signal
import sys
import textwrap
import time
from pathlib import Path

import click

from harness.errors import HarnessError

DEFAULT_CLUSTER_DIR = Path(os.environ.get("HARNESS_CLUSTER_DIR", ".harness/cluster"))


def _sigterm_as_interrupt(signum, frame):
    raise KeyboardInterrupt


class HarnessGroup(click.Group):
    """Turns user-facing failures into one line on stderr and an exit code, never a traceback."""

    def main(self, args=None, prog_name=None, **extra):
        signal.signal(signal.SIGTERM, _sigterm_as_interrupt)
        # A shell starts background jobs with SIGINT ignored, and Python then never raises
        # KeyboardInterrupt: restore it so `kill -INT` stops a run cleanly wherever it was started.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            return super().main(args=args, prog_name=prog_name, standalone_mode=False, **extra)
        except click.exceptions.Exit as exc:
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            exc.show()
            sys.exit(2)
        except HarnessError as exc:
            click.echo(f"harness: error: {exc}", err=True)
            sys.exit(exc.exit_code)
        except (KeyboardInterrupt, click.exceptions.Abort):
            click.echo("harness: interrupted; processes stopped", err=True)
            sys.exit(130)


@click.group(cls=HarnessGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="spark-kafka-harness")
def main():
    """Delivery-semantics test harness for Spark Structured Streaming pipelines over Kafka.

    \b
    Examples:
      harness cluster up --brokers 3      start a real 3-broker Kafka (KRaft) on loopback
      harness cluster up --docker         the same brokers as containers (images built here)
      harness cluster status              brokers, pids, ports, health
      harness cluster down                stop exactly what `up` started
      harness scenarios                   the shipped scenarios
      harness run scenarios/smoke.yaml    a pipeline under faults, checked, reports in reports/
      harness check RUN_DIR               judge a stored run again (verdict, expectations)
      harness report RUN_DIR              rewrite its report.json/.md/.html and junit.xml
      harness gate scenarios/             run a suite, junit.xml + summary, exit 1 on any failure
      harness matrix scenarios/matrix/guarantees.yaml   a grid of sinks x faults: the guarantee in each cell
      harness clean RUN_DIR               stop what a killed run left running
      harness demo                        Kafka -> Spark -> Kafka, stopped and restarted
      harness spark-env 3.5.7             the drivers' environment for cluster.spark.version 3.5.7
      harness images build                the Docker images of cluster.docker (no registry needed)
    """


@main.group()
def cluster():
    """The embedded Kafka cluster: real brokers from Kafka's jars, as processes or (--docker) containers."""


def _attach(cluster_dir: Path):
    """The cluster in `cluster_dir`, whichever way its brokers run."""
    from harness.cluster import EmbeddedCluster
    from harness.docker.cluster import ContainerCluster

    runtime = EmbeddedCluster.runtime_of(cluster_dir)
    return (ContainerCluster if runtime == ContainerCluster.runtime else EmbeddedCluster).attach(cluster_dir)


dir_option = click.option(
    "--dir",
    "cluster_dir",
    type=click.Path(path_type=Path),
    default=DEFAULT_CLUSTER_DIR,
    show_default=True,
    help="Cluster directory: configs, data, logs and pid files.",
)


@cluster.command("up")
@click.option("--brokers", type=click.Choice(["1", "3"]), default="1", show_default=True, help="Number of brokers.")
@click.option(
    "--docker",
    "in_containers",
    is_flag=True,
    help="Run the brokers as containers (host network), the image built when missing.",
)
@click.option(
    "--security",
    type=click.Choice(["sasl_ssl", "ssl"]),
    default=None,
    help="Secure the clients' listeners: SASL_SSL with a SCRAM user (--user), or TLS with client "
    "certificates; brokers always speak TLS among themselves then. Certificates in DIR/tls.",
)
@click.option(
    "--user",
    default=None,
    metavar="NAME",
    help="With --security sasl_ssl: a SCRAM-SHA-256 user to create, "
    "its password read from the environment variable HARNESS_KAFKA_PASSWORD.",
)
@dir_option
def cluster_up(brokers: str, in_containers: bool, security: str | None, user: str | None, cluster_dir: Path):
    """Format storage, start the brokers, wait until they answer, print the bootstrap servers.

    \b
    Examples:
      $ harness cluster up --brokers 3
      127.0.0.1:40411,127.0.0.1:38125,127.0.0.1:45277
      $ harness cluster up --docker
      $ HARNESS_KAFKA_PASSWORD=... harness cluster up --security sasl_ssl --user app
    """
    from harness.cluster import EmbeddedCluster
    from harness.cluster.security import ClusterSecurity

    if (user is not None) != (security == "sasl_ssl"):
        raise click.UsageError("--user goes with --security sasl_ssl, and it needs one")
    password = os.environ.get("HARNESS_KAFKA_PASSWORD") if user else None
    if user and not password:
        raise click.UsageError("--user NAME: set its password in the environment variable HARNESS_KAFKA_PASSWORD")
    secured = ClusterSecurity(security) if security else None
    t0 = time.monotonic()
    if in_containers:
        from harness.docker import engine, images
        from harness.docker.cluster import ContainerCluster

        image = images.ensure_kafka(engine.client(), say=lambda line: click.echo(line, err=True))
        embedded = ContainerCluster.create(cluster_dir, brokers=int(brokers), image=image, security=secured)
    else:
        embedded = EmbeddedCluster.create(cluster_dir, brokers=int(brokers), security=secured)
    try:
        embedded.start()
        if user:
            embedded.add_scram_user(user, password)
    except BaseException:
        embedded.close()  # nothing it started is left, process or container
        raise
    click.echo(
        f"Kafka {embedded.kafka_version} up: {brokers} broker(s) in {embedded.workdir} after "
        f"{time.monotonic() - t0:.1f}s",
        err=True,
    )
    if secured:
        access = embedded.client_access(user)
        click.echo(
            f"clients: {access.security.protocol}{f' as {user} (SCRAM-SHA-256)' if user else ''}, the brokers' CA "
            f"in {access.security.ca_file}"
            + (f", a client certificate in {access.security.keystore_file}" if access.security.keystore_file else ""),
            err=True,
        )
    click.echo(embedded.bootstrap_servers)


@cluster.command("status")
@dir_option
def cluster_status(cluster_dir: Path):
    """Show each broker: node id, address, pid, state, and whether the cluster answers."""
    from harness.cluster import KafkaAdmin

    embedded = _attach(cluster_dir)
    live: set[int] = set()
    if embedded.running_brokers():
        try:
            with KafkaAdmin(embedded.admin_access(), request_timeout_ms=3000, connect_timeout_ms=3000) as admin:
                live = admin.live_broker_ids()
        except HarnessError:
            pass
    click.echo(f"cluster {embedded.cluster_id}  Kafka {embedded.kafka_version}  {embedded.workdir}")
    click.echo(f"{'node':<5} {'address':<22} {'controller':<11} {'pid':<8} {'state':<8} {'metadata':<9} log")
    for st in embedded.status():
        listed = "live" if st.node_id in live else "-"
        click.echo(
            f"{st.node_id:<5} {st.address:<22} {st.controller_port:<11} {st.pid or '-':<8} {st.state:<8} {listed:<9} "
            f"{st.log}"
        )
    click.echo(f"bootstrap servers: {embedded.bootstrap_servers}")


@cluster.command("down")
@dir_option
def cluster_down(cluster_dir: Path):
    """Stop exactly the brokers `up` started (processes by pid file and start time; containers by label, removed)."""
    embedded = _attach(cluster_dir)
    running = [b.name for b in embedded.running_brokers()]
    embedded.close()
    click.echo(f"stopped {', '.join(running)}" if running else "no broker was running")


@main.command()
@click.option(
    "--dir",
    "workdir",
    type=click.Path(path_type=Path),
    default=None,
    help="Where to keep the demo's files [reports/demo-TIMESTAMP].",
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

    workdir = workdir or _default_run_dir("demo")
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


SCENARIOS_DIR = Path(__file__).resolve().parent.parent / "scenarios"


def _default_run_dir(name: str) -> Path:
    return Path("reports") / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"


EXIT_PASS, EXIT_FAIL, EXIT_UNKNOWN = 0, 1, 3

allow_unknown_option = click.option(
    "--allow-unknown",
    is_flag=True,
    help="Exit 0 when no expectation failed but some could not be measured (unknown is never a pass otherwise).",
)


def _exit_code(outcome: str, allow_unknown: bool) -> int:
    return {"pass": EXIT_PASS, "fail": EXIT_FAIL}.get(outcome, EXIT_PASS if allow_unknown else EXIT_UNKNOWN)


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


def _run(
    scenario_file: Path,
    run_dir: Path | None,
    duration: float | None,
    seed: int | None,
    play_faults: bool,
    allow_unknown: bool = False,
    repeat: int = 1,
    until: float | None = None,
    bootstrap_servers: str | None = None,
):
    """One run, or (with `repeat` > 1 or `until`) runs one after another into the folder `run_dir`, each with the
    next seed; the exit code is the worst of them."""
    from harness.scenario import load_scenario

    scenario = load_scenario(scenario_file, bootstrap_servers)
    if repeat == 1 and until is None:
        sys.exit(
            _run_once(scenario, run_dir or _default_run_dir(scenario.name), duration, seed, play_faults, allow_unknown)
        )
    folder = run_dir or Path("reports")
    first_seed = scenario.workload.seed if seed is None else seed
    codes = []
    for number in itertools.count():
        if number >= repeat and (until is None or time.time() >= until):
            break
        click.echo(
            f"run {number + 1}"
            + (
                f" of {repeat}"
                if until is None
                else f", repeating until {time.strftime('%H:%M', time.localtime(until))}"
            )
            + f" (seed {first_seed + number})"
        )
        codes.append(
            _run_once(
                scenario,
                folder / f"{scenario.name}-{time.strftime('%Y%m%d-%H%M%S')}",
                duration,
                first_seed + number,
                play_faults,
                allow_unknown,
            )
        )
    worst = max(codes, key=lambda code: {EXIT_PASS: 0, EXIT_UNKNOWN: 1, EXIT_FAIL: 2}.get(code, 2))
    click.echo(
        f"{len(codes)} runs: {codes.count(EXIT_PASS)} passed, {codes.count(EXIT_FAIL)} failed, "
        f"{codes.count(EXIT_UNKNOWN)} unknown; the trend is in {folder / 'index.html'}"
    )
    sys.exit(worst)


def _run_once(
    scenario, run_dir: Path, duration: float | None, seed: int | None, play_faults: bool, allow_unknown: bool
) -> int:
    """One run, then its report, written whenever the run's workload began: a run that failed before its workload
    (bad input, the environment) raises (exit 2) with nothing to judge; one interrupted raises (130) after its
    report is written."""
    from harness.runner.console import Console
    from harness.runner.run import run_scenario

    console = Console()
    console.say(f"scenario {scenario.name}: evidence in {run_dir}")
    try:
        summary = run_scenario(
            scenario, run_dir, duration_s=duration, seed=seed, play_faults=play_faults, console=console
        )
    except BaseException:
        from harness.evidence.layout import RunLayout

        if RunLayout(Path(run_dir)).ack_log.is_file():  # the workload began: there is something to judge
            try:
                _report(Path(run_dir), quiet=True)
            except HarnessError:  # the run's own error is the one to show
                pass
        raise
    failed = f"; stopped by themselves: {', '.join(summary.failed_streamlets)}" if summary.failed_streamlets else ""
    click.echo(
        f"{summary.acked:,} records acknowledged, {summary.unknown:,} unknown; "
        f"{summary.faults_played} of {summary.faults_planned} faults played{failed}"
    )
    if summary.error:
        click.echo(f"run {summary.status}: {summary.error}")
    click.echo(f"run directory: {summary.run_dir}")
    report = _report(Path(summary.run_dir))
    return _exit_code(report.outcome, allow_unknown)


def _report(run_dir: Path, quiet: bool = False):
    """Check a run directory, write its reports and the folder's index, print the verdict and the paths (with
    `quiet`, only the paths)."""
    from harness.report.index import write_index
    from harness.report.write import check_and_write

    report, paths = check_and_write(run_dir)
    index = write_index(Path(run_dir).parent)
    if not quiet:
        _print_verdict(report)
    click.echo("reports: " + ", ".join(str(p) for p in paths.values()) + f"; index: {index}")
    return report


def _n(value) -> str:
    return "unknown" if value is None else f"{value:,}"


def _print_verdict(report) -> None:
    from harness.report.tables import doubt_lines

    c = report.counts
    dropped = f"dropped by design {_n(c.dropped)}, " if c.dropped != 0 else ""
    undelivered = f"undelivered {_n(c.undelivered)}, " if c.undelivered != 0 else ""
    click.echo(
        f"{report.outcome.upper()}  verdict: {report.verdict}  (acked {_n(c.acked)}, lost {_n(c.lost)}, "
        f"{undelivered}{dropped}"
        f"duplicated deliveries {_n(c.duplicated_deliveries)}, duplicated in state {_n(c.duplicated_in_state)}, "
        f"phantom {_n(c.phantom)}, reordered {_n(c.reordered)})"
    )
    for line in doubt_lines(report):
        click.echo(line)
    for gap in report.gaps:
        click.echo(f"partial: {gap}")
    for e in report.expectations:
        click.echo(f"  {e.status if e.passed else e.status.upper():<7}  {e.name}: {e.detail}")
    counted = {status: sum(e.status == status for e in report.expectations) for status in ("pass", "fail", "unknown")}
    click.echo(
        f"expectations: {counted['pass']} of {len(report.expectations)} passed"
        + (f", {counted['fail']} failed" if counted["fail"] else "")
        + (f", {counted['unknown']} unknown" if counted["unknown"] else "")
    )


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
        help="Seconds of workload (overrides the scenario).",
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
    allow_unknown_option,
]


def _with_run_options(command):
    for option in reversed(run_options):
        command = option(command)
    return command


@main.command("run")
@_with_run_options
def run_command(
    scenario_file: Path,
    run_dir: Path | None,
    duration: float | None,
    seed: int | None,
    repeat: int,
    until: float | None,
    bootstrap_servers: str | None,
    allow_unknown: bool,
):
    """Run SCENARIO_FILE end to end: pipeline, workload, faults; keep the evidence.

    \b
    The run ends by checking the evidence and writing report.json, report.md,
    report.html and junit.xml into the run directory (and reports/index.html).

    \b
    Exit codes: 0 the run completed and every expectation passed, 1 it could
    not complete or an expectation failed, 2 bad input, 3 nothing failed but
    an expectation could not be measured (unknown; 0 with --allow-unknown),
    130 interrupted (the evidence so far is kept; nothing is left running).

    \b
    Examples:
      harness run scenarios/smoke.yaml
      harness run scenarios/driver-kill-append.yaml --duration 60 --seed 7 --out reports/kill7
      harness run scenarios/nightly-soak.yaml --until 06:00 --out reports/nightly
      harness run scenarios/compose.yaml --bootstrap-servers 127.0.0.1:19092
    """
    _run(
        scenario_file,
        run_dir,
        duration,
        seed,
        play_faults=True,
        allow_unknown=allow_unknown,
        repeat=repeat,
        until=until,
        bootstrap_servers=bootstrap_servers,
    )


@main.command("check")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print report.json's content instead of the summary.")
@allow_unknown_option
def check_command(run_dir: Path, as_json: bool, allow_unknown: bool):
    """Judge the evidence in RUN_DIR again (files only: no broker, no Spark) and print the verdict.

    Nothing is written. A run still in progress (its processes alive) or cut
    short is said to be so first, and what it has not delivered yet is not
    counted as lost. Exit codes: 0 every expectation passed, 1 one failed,
    2 the run directory cannot be judged (missing, or no acknowledgement log),
    3 none failed but one could not be measured (0 with --allow-unknown).

    \b
    Examples:
      harness check reports/smoke-20261121-101500
      harness check reports/smoke-20261121-101500 --json | jq .verdict
    """
    import json

    from harness.report.write import judge_run

    report = judge_run(run_dir)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2, default=str))
    else:
        _print_verdict(report)
    sys.exit(_exit_code(report.outcome, allow_unknown))


@main.command("report")
@click.argument("run_dir", type=click.Path(path_type=Path))
@allow_unknown_option
def report_command(run_dir: Path, allow_unknown: bool):
    """Check RUN_DIR and (re)write its report.json, report.md, report.html and junit.xml, and the index
    of the folder it is in. Exit codes as for `check`.

    \b
    Example:
      harness report reports/smoke-20261121-101500
    """
    report = _report(run_dir)
    sys.exit(_exit_code(report.outcome, allow_unknown))


@main.command("gate")
@click.argument("suite", type=click.Path(path_type=Path))
@click.option(
    "--out", type=click.Path(path_type=Path), default=None, help="Folder for the suite's runs [reports/gate-TIMESTAMP]."
)
@click.option(
    "--duration",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Seconds of workload for every scenario (overrides).",
)
@click.option("--seed", type=int, default=None, help="Seed for every scenario (overrides).")
@allow_unknown_option
def gate_command(suite: Path, out: Path | None, duration: float | None, seed: int | None, allow_unknown: bool):
    """Run a suite of scenarios (a folder of *.yaml, or a file listing them), check each, and gate.

    Writes one run directory per scenario, junit.xml (one suite per scenario,
    one case per expectation), summary.md, summary.json and index.html into
    the output folder. Every scenario is validated before anything runs.

    \b
    Exit codes: 0 every scenario ran and passed, 1 any expectation failed or a
    run could not complete, 2 bad input, 3 none failed but some expectation
    could not be measured (unknown; 0 with --allow-unknown), 130 interrupted.

    \b
    Examples:
      harness gate scenarios/ --out reports/release-1.4
      harness gate release.suite --duration 60     # release.suite: one scenario path per line
    """
    from harness.checker.findings import merge
    from harness.runner.console import Console
    from harness.scenario import load_scenario
    from harness.suite import default_out, run_suite, suite_files

    files = suite_files(suite)
    scenarios = [load_scenario(f) for f in files]
    out = out or default_out()
    entries, index = run_suite(list(zip(files, scenarios)), out, duration, seed, Console())
    ok = sum(e.outcome == "pass" for e in entries)
    unknown = sum(e.outcome == "unknown" for e in entries)
    click.echo(
        f"suite: {ok} of {len(entries)} scenarios passed"
        + (f", {unknown} unknown" if unknown else "")
        + f"; junit {out / 'junit.xml'}, summary {out / 'summary.md'}, index {index}"
    )
    sys.exit(_exit_code(merge(e.outcome for e in entries), allow_unknown))


@main.command("matrix")
@click.argument("matrix_file", type=click.Path(path_type=Path))
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=None,
    help="Folder of the matrix's runs and reports [reports/matrix-NAME]; a folder holding this matrix cut short "
    "resumes it.",
)
@click.option("--check", "only_check", is_flag=True, help="Validate the matrix and list its cells; run nothing.")
@allow_unknown_option
def matrix_command(matrix_file: Path, out: Path | None, only_check: bool, allow_unknown: bool):
    """Run a grid of scenarios (rows x columns, each cell a few seeds) and write one report of the guarantees.

    Each cell is the matrix's base scenario patched by its row and its column (see
    scenarios/matrix/). Every cell is validated before anything runs. The runs go one
    after another with a live progress line and an estimate of the time left; after each,
    matrix.html, matrix.md and matrix.json in the output folder show the grid so far. A
    matrix cut short (Ctrl-C, a crash) keeps its finished runs: the same command resumes it.

    \b
    Exit codes: 0 every run completed with a known verdict (and its expectations, if a cell
    has any, passed), 1 a run could not complete or an expectation failed, 2 bad input,
    3 some verdict or expectation unknown (0 with --allow-unknown), 130 interrupted.

    \b
    Examples:
      harness matrix scenarios/matrix/guarantees.yaml
      harness matrix scenarios/matrix/guarantees.yaml --out reports/matrix-nightly   # again: resumes
      harness matrix my-grid.yaml --check
    """
    from harness.checker.findings import merge
    from harness.matrix.execution import run_matrix
    from harness.matrix.spec import load_matrix, slug
    from harness.runner.console import Console

    spec = load_matrix(matrix_file)
    if only_check:
        click.echo(
            f"matrix {spec.name}: {len(spec.rows)} rows x {len(spec.columns)} columns, {spec.repeats} run(s) per cell "
            f"(seeds {', '.join(map(str, spec.seeds()))}), {len(spec.cells) * spec.repeats} runs"
        )
        for cell in spec.cells:
            click.echo(
                f"  {cell.row} x {cell.column}: "
                f"{cell.scenario.workload.duration_s if spec.duration_s is None else spec.duration_s:g}s, "
                f"faults: {', '.join(r.kind for r in cell.scenario.faults) or 'none'}"
            )
        return
    out = out or Path("reports") / f"matrix-{slug(spec.name)}"
    state = run_matrix(spec, out, Console())
    click.echo(
        f"matrix {spec.name}: {len(state.runs)} runs in {state.elapsed_s / 60:.0f} min; "
        f"{out / 'matrix.html'}, {out / 'matrix.md'}, {out / 'matrix.json'}"
    )
    sys.exit(_exit_code(merge(r.outcome for r in state.runs), allow_unknown))


@main.command("scenarios")
@click.option(
    "--dir",
    "folder",
    type=click.Path(path_type=Path),
    default=SCENARIOS_DIR,
    show_default=False,
    help="Folder of scenario files [the shipped ones].",
)
def scenarios_command(folder: Path):
    """List the scenario files with their descriptions (each one validated)."""
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
        expected = f"exactly {e.verdict}" if e.verdict else e.end_to_end or "see expectations"
        click.echo(f"{path.stem:<{width}}  {scenario.workload.duration_s:>6g}s  {expected:<24}  [{faults}]")
        click.echo(
            textwrap.fill(" ".join(scenario.description.split()), 100, initial_indent="    ", subsequent_indent="    ")
        )


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


@main.group()
def images():
    """The Docker images of `cluster: {docker: {}}`, built on this machine (no registry is needed)."""


@images.command("build")
@click.option("--runner", is_flag=True, help="Also the image of docker-compose.yml's harness service.")
@click.option("--force", is_flag=True, help="Build again even when up to date.")
@click.option(
    "--if-engine",
    is_flag=True,
    help="For a setup step: do nothing when no Docker engine answers, and say "
    "why (exit 0) when the images cannot be built here.",
)
def images_build(runner: bool, force: bool, if_engine: bool):
    """Build the base image (Debian minbase by debootstrap + a jlink Java) and the Kafka image, when missing
    or out of date; print each image's tag and size.

    \b
    Examples:
      harness images build                # about 3 minutes the first time, then instant
      harness images build --runner       # also harness/runner, for `docker compose run harness`
    """
    from harness.docker import engine
    from harness.docker import images as docker_images

    try:
        client = engine.client()
    except HarnessError as exc:
        if if_engine:
            click.echo(f"no Docker images built: {exc}", err=True)
            return
        raise
    names = ("base", "kafka", "runner") if runner else ("base", "kafka")
    try:
        built = docker_images.ensure(client, names, say=lambda line: click.echo(line, err=True), force=force)
    except HarnessError as exc:
        if if_engine:
            click.echo(f"no Docker images built: {exc}", err=True)
            return
        raise
    for image in built:
        found = docker_images.find(client, image.tag)
        click.echo(f"{image.tag:<32} {found.attrs['Size'] / 1e6:6.0f} MB  {found.short_id}")


@main.group()
def pipeline():
    """Pipelines without faults."""


@pipeline.command("run")
@_with_run_options
def pipeline_run(
    scenario_file: Path,
    run_dir: Path | None,
    duration: float | None,
    seed: int | None,
    repeat: int,
    until: float | None,
    bootstrap_servers: str | None,
    allow_unknown: bool,
):
    """Run SCENARIO_FILE's pipeline and workload but none of its faults; keep the evidence.

    \b
    Example:
      harness pipeline run scenarios/baseline.yaml --duration 20
    """
    _run(
        scenario_file,
        run_dir,
        duration,
        seed,
        play_faults=False,
        allow_unknown=allow_unknown,
        repeat=repeat,
        until=until,
        bootstrap_servers=bootstrap_servers,
    )


@main.command()
def jars():
    """Fetch the Kafka broker and Spark connector jars with Maven, train the JVMs' CDS archives (both idempotent)."""
    from harness import cds_training
    from harness import jars as jar_sets

    jar_sets.fetch()
    click.echo(
        f"Kafka {jar_sets.kafka_version()}, Spark Kafka connector {jar_sets.connector_version()} and Delta "
        f"{jar_sets.delta_version()} in {jar_sets.jars_dir()}"
    )
    cds_training.train(say=click.echo)


@main.command("spark-env")
@click.argument("version")
def spark_env(version):
    """Build the environment the drivers of a scenario with `cluster: {spark: {version: VERSION}}` run on: a
    virtualenv with that pyspark under .cache/spark-envs/, and its Kafka connector jars from jars/ (both once; a run
    builds it too when missing).

    \b
    Examples:
      harness spark-env 3.5.7      pyspark 3.5.7 and spark-sql-kafka-0-10_2.12 3.5.7
    """
    from harness.spark import versions

    runtime = versions.ensure(version, say=click.echo)
    click.echo(
        f"Spark {runtime.version} (Scala {runtime.scala}): {runtime.python}, connector in {runtime.jar_set} jars"
    )


if __name__ == "__main__":
    main()
