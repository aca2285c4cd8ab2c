"""The commands that run many scenarios and gate on them: `gate` (a suite) and `matrix` (a grid)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from harness.cli.app import main
from harness.cli.options import allow_unknown_option
from harness.outcome import exit_code


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
    from harness.checker.expectations.result import merge
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
    sys.exit(exit_code(merge(e.outcome for e in entries), allow_unknown))


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
    from harness.checker.expectations.result import merge
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
    sys.exit(exit_code(merge(r.outcome for r in state.runs), allow_unknown))
