"""A suite for release gating: several scenarios run one after the other, each checked and reported,
then one junit.xml and a summary for the whole suite."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from harness.checker.expect import EXPECTATIONS
from harness.errors import HarnessError
from harness.judging import run_and_judge
from harness.report.index import write_index
from harness.report.junit import suite_element, unjudged_element, write_junit
from harness.runner.console import Console
from harness.scenario import Scenario


class SuiteError(HarnessError):
    pass


@dataclass(frozen=True)
class SuiteEntry:
    scenario_file: Path
    run_dir: Path
    status: str
    verdict: str
    outcome: str  # pass | fail | unknown
    failed: tuple[str, ...]  # names of failed (or, marked so, unknown) expectations
    elapsed_s: float

    @property
    def passed(self) -> bool:
        return self.outcome == "pass"


def suite_files(suite: Path) -> list[Path]:
    """A folder: its *.yaml files. A file: one scenario path per line (# comments; relative to the file)."""
    suite = Path(suite)
    if suite.is_dir():
        files = sorted(suite.glob("*.yaml"))
        if not files:
            raise SuiteError(f"{suite}: no scenario files (*.yaml)")
        return files
    if not suite.is_file():
        raise SuiteError(f"{suite}: no such suite file or folder")
    files = []
    for number, line in enumerate(suite.read_text().splitlines(), 1):
        entry = line.split("#", 1)[0].strip()
        if not entry:
            continue
        path = (suite.parent / entry) if not Path(entry).is_absolute() else Path(entry)
        if not path.is_file():
            raise SuiteError(f"{suite}: line {number}: no such scenario file {entry}")
        files.append(path)
    if not files:
        raise SuiteError(f"{suite}: lists no scenarios")
    return files


def run_suite(
    scenarios: list[tuple[Path, Scenario]], out: Path, duration: float | None, seed: int | None, console: Console
) -> tuple[list[SuiteEntry], Path]:
    """Run, check and report each scenario into out/<file stem>; junit.xml and the summary are
    rewritten after every scenario (a suite cut short keeps what it found). Returns the entries and index."""
    out.mkdir(parents=True, exist_ok=True)
    entries, suites = [], []
    for number, (path, scenario) in enumerate(scenarios, 1):
        run_dir = out / path.stem
        console.say(f"[{number}/{len(scenarios)}] {path.stem}: evidence in {run_dir}")
        judged = run_and_judge(scenario, run_dir, console, duration_s=duration, seed=seed, keep_going=True)
        expectations = judged.report[EXPECTATIONS] if judged.report else []
        suites.append(
            suite_element(judged.report, name=path.stem)
            if judged.report is not None
            else unjudged_element(path.stem, run_dir, judged.error or "the run failed")
        )
        outcome = judged.gate_outcome
        failed = tuple(e.name + ("" if e.status == "fail" else " (unknown)") for e in expectations if not e.passed) + (
            ()
            if judged.status == "complete"
            else (f"run {judged.status}" + (f": {judged.error}" if judged.error else ""),)
        )
        entries.append(SuiteEntry(path, run_dir, judged.status, judged.verdict, outcome, failed, judged.elapsed_s))
        console.say(
            f"[{number}/{len(scenarios)}] {path.stem}: {judged.verdict}, "
            + ("passed" if outcome == "pass" else f"{outcome.upper()}: " + ", ".join(failed))
        )
        for expectation in (e for e in expectations if not e.passed):
            console.say(f"    {expectation.name}: {expectation.detail}")
        write_junit(out / "junit.xml", suites)
        write_summary(out, entries)
    return entries, write_index(out)


def write_summary(out: Path, entries: list[SuiteEntry]) -> tuple[Path, Path]:
    passed = sum(e.passed for e in entries)
    lines = [
        f"# Suite: {passed} of {len(entries)} scenarios passed",
        "",
        "| scenario | verdict | status | result | failed expectations | run | time (s) |",
        "|---|---|---|---|---|---|---|",
    ]
    for e in entries:
        lines.append(
            f"| {e.scenario_file.stem} | {e.verdict} | {e.status} | "
            f"{e.outcome if e.passed else '**' + e.outcome.upper() + '**'} | "
            f"{', '.join(e.failed)} | [{e.run_dir.name}]({e.run_dir.name}/report.html) | {e.elapsed_s:.0f} |"
        )
    md = out / "summary.md"
    md.write_text("\n".join(lines) + "\n")
    js = out / "summary.json"
    js.write_text(
        json.dumps(
            {
                "passed": passed == len(entries),
                "scenarios": [
                    {
                        "scenario": str(e.scenario_file),
                        "run_dir": str(e.run_dir),
                        "status": e.status,
                        "verdict": e.verdict,
                        "outcome": e.outcome,
                        "passed": e.passed,
                        "failed_expectations": list(e.failed),
                        "elapsed_s": round(e.elapsed_s, 1),
                    }
                    for e in entries
                ],
            },
            indent=2,
        )
    )
    return md, js


def default_out() -> Path:
    return Path("reports") / f"gate-{time.strftime('%Y%m%d-%H%M%S')}"
