"""JUnit XML: one test case per expectation, so CI systems show which guarantee a run broke.

A failed expectation is a <failure>, one that could not be measured an <error> (unknown is
never a pass); each message gives the causes, a few example records and the report's path.
"""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET
from pathlib import Path

from harness.checker.anomaly_records import WITNESSES
from harness.checker.counts import VERDICT
from harness.checker.expect import EXPECTATIONS
from harness.checker.run_report import Report
from harness.checker.section import Section
from harness.checker.timeline import TIMELINE
from harness.files import write_atomically
from harness.report.layout import section_part
from harness.report.markdown import part_text
from harness.report.tables import causes_text, witness_line

EXAMPLES = 3


def _elapsed_s(report: Report) -> float:
    return float((report[TIMELINE] or {}).get("duration_s") or 0.0)


def _body(report: Report, case) -> str:
    lines = [
        f"expected {case.expected}, got {'unknown' if case.actual is None else case.actual}",
        case.detail,
        f"verdict: {report[VERDICT]}; causes: {causes_text(report)}",
    ]
    examples = [w for w in report[WITNESSES] if w.anomaly != "reordered"][:EXAMPLES]
    lines += ["examples:"] + [f"  {witness_line(w)}" for w in examples] if examples else []
    lines += [f"partial evidence: {g}" for g in report.gaps]
    lines.append(f"report: {Path(report.run_dir) / 'report.html'}")
    return "\n".join(lines)


def suite_element(report: Report, name: str | None = None) -> ET.Element:
    cases = report[EXPECTATIONS]
    started = (report[TIMELINE] or {}).get("start_ms")
    suite = ET.Element(
        "testsuite",
        name=name or report.scenario,
        tests=str(len(cases)),
        failures=str(sum(c.status == "fail" for c in cases)),
        errors=str(sum(c.status == "unknown" for c in cases)),
        time=f"{_elapsed_s(report):.3f}",
        timestamp=time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(started / 1000)) if started else "",
    )
    properties = ET.SubElement(suite, "properties")
    for key, value in (
        ("outcome", report.outcome),
        ("verdict", report[VERDICT]),
        ("run_dir", report.run_dir),
        ("status", report.status),
        ("report", str(Path(report.run_dir) / "report.html")),
    ):
        ET.SubElement(properties, "property", name=key, value=str(value))
    error = report.run_info.get("error")
    if report.status == "failed" and error:  # the run's own failure, with what the checks say of it (its logs' ends)
        element = ET.SubElement(suite, "testcase", classname=f"harness.{report.scenario}", name="run", time="0")
        text = "\n\n".join([error, *(_section_text(s) for s in report.sections.values())])
        ET.SubElement(element, "failure", message=error, type="RunFailed").text = text
        suite.set("tests", str(int(suite.get("tests")) + 1))
        suite.set("failures", str(int(suite.get("failures")) + 1))
    if report.doubts:  # a gate must not read passing cases as a pass when the run itself is in doubt
        element = ET.SubElement(suite, "testcase", classname=f"harness.{report.scenario}", name="run", time="0")
        ET.SubElement(element, "error", message=report.doubts[0], type="RunInDoubt").text = "\n".join(report.doubts)
        suite.set("tests", str(len(cases) + 1))
        suite.set("errors", str(int(suite.get("errors")) + 1))
    for case in cases:
        element = ET.SubElement(suite, "testcase", classname=f"harness.{report.scenario}", name=case.name, time="0")
        if case.status == "fail":
            ET.SubElement(element, "failure", message=case.detail, type="ExpectationFailed").text = _body(report, case)
        elif case.status == "unknown":
            ET.SubElement(element, "error", message=case.detail, type="ExpectationUnknown").text = _body(report, case)
        else:
            ET.SubElement(element, "system-out").text = case.detail
    if report.sections:  # each check's of harness/checker/checks/, as text
        ET.SubElement(suite, "system-out").text = "\n\n".join(_section_text(s) for s in report.sections.values())
    if report.gaps:
        ET.SubElement(suite, "system-err").text = "partial evidence:\n" + "\n".join(report.gaps)
    return suite


def _section_text(section: Section) -> str:
    """A check's section as report.md has it."""
    return "\n".join(part_text(section_part(section))).strip()


def unjudged_element(name: str, run_dir: Path, error: str) -> ET.Element:
    """A suite's scenario whose run failed before there was anything to judge: one errored case, saying why."""
    suite = ET.Element("testsuite", name=name, tests="1", failures="0", errors="1", time="0")
    properties = ET.SubElement(suite, "properties")
    for key, value in (("outcome", "fail"), ("verdict", "unknown"), ("run_dir", str(run_dir)), ("status", "failed")):
        ET.SubElement(properties, "property", name=key, value=value)
    element = ET.SubElement(suite, "testcase", classname=f"harness.{name}", name="run", time="0")
    ET.SubElement(element, "error", message=error, type="RunFailed").text = error
    return suite


def write_junit(path: Path, suites: list[ET.Element]) -> Path:
    root = ET.Element(
        "testsuites",
        tests=str(sum(int(s.get("tests")) for s in suites)),
        failures=str(sum(int(s.get("failures")) for s in suites)),
        errors=str(sum(int(s.get("errors")) for s in suites)),
        time=f"{sum(float(s.get('time') or 0) for s in suites):.3f}",
    )
    root.extend(suites)
    ET.indent(root)
    return write_atomically(path, ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n")
