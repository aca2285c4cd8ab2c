"""The README is a guide a person reads in minutes, and every relative link in it and in docs/ leads somewhere."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def test_the_readme_is_at_most_300_lines():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 300


def test_every_relative_link_resolves():
    broken = [
        f"{page.relative_to(ROOT)}: {target}"
        for page in PAGES
        for target in LINK.findall(page.read_text())
        if not re.match(r"[a-z]+:", target)  # http:, https:, mailto:
        and not (page.parent / target.split("#")[0]).exists()
    ]
    assert not broken
    assert sum(len(LINK.findall(p.read_text())) for p in PAGES) > 20  # the links this test is about are there
