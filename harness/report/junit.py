"""JUnit XML: one test case per expectation, so CI systems show which guarantee a run broke."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from harness.checker.findings import Report
from harness.files import write_atomically


def suite_element(report: Report, name: str | None = None) -> ET.Element:
    cases = report.expectations
    suite = ET.Element("testsuite", name=name or report.scenario, tests=str(len(cases)),
                       failures=str(sum(not c.passed for c in cases)), errors="0")
    properties = ET.SubElement(suite, "properties")
    for key, value in (("verdict", report.verdict), ("run_dir", report.run_dir), ("status", report.status)):
        ET.SubElement(properties, "property", name=key, value=str(value))
    for case in cases:
        element = ET.SubElement(suite, "testcase", classname=f"harness.{report.scenario}", name=case.name)
        if not case.passed:
            ET.SubElement(element, "failure", message=case.detail, type="ExpectationFailed").text = (
                f"expected {case.expected}, got {case.actual}\n{case.detail}\nrun directory: {report.run_dir}")
        else:
            ET.SubElement(element, "system-out").text = case.detail
    if report.gaps:
        ET.SubElement(suite, "system-err").text = "partial evidence:\n" + "\n".join(report.gaps)
    return suite


def write_junit(path: Path, suites: list[ET.Element]) -> Path:
    root = ET.Element("testsuites", tests=str(sum(int(s.get("tests")) for s in suites)),
                      failures=str(sum(int(s.get("failures")) for s in suites)))
    root.extend(suites)
    ET.indent(root)
    return write_atomically(path, ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n")
