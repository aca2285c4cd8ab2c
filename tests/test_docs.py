"""The user's guide stays a guide: the README at most 300 lines, and every relative link in it and in docs/
resolves to a file or folder of the repository; the report pages name the schema version runs write."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "bench").glob("*.md"))]


def test_the_readme_is_at_most_300_lines():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 300


def test_every_relative_link_resolves():
    broken, checked = [], 0
    for page in _pages():
        text = page.read_text()
        text = re.sub(r"```.*?```", "", text, flags=re.S)  # code blocks hold no links
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue  # a web address, or a place on the same page
            path = (page.parent / target.split("#", 1)[0]).resolve()
            checked += 1
            if not path.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert broken == []
    assert checked > 50  # the pages do link to each other


def test_the_reports_pages_name_the_schema_version_runs_write():
    from harness.checker.run_report import SCHEMA_VERSION

    for page in ("reports.md", "checker.md"):
        named = re.findall(r"schema_version (\d+)", (ROOT / "docs" / page).read_text())
        assert named and set(named) == {str(SCHEMA_VERSION)}, (page, named)
