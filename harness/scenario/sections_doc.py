"""docs/scenarios.md's field tables, written from the sections' declarations (harness/scenario/declared.py SECTIONS):

    .venv/bin/python -m harness.scenario.sections_doc docs/scenarios.md

rewrites what stands between its markers; tests/test_scenario_sections.py fails while the page and the declarations
differ."""

from __future__ import annotations

import sys
from pathlib import Path

from harness.scenario.declared import SECTIONS
from harness.scenario.sections import BEGIN, END


def tables() -> str:
    return "\n\n".join(section.table() for section in SECTIONS)


def rewritten(text: str) -> str:
    if BEGIN not in text or END not in text:
        raise SystemExit(f"the page has no {BEGIN} ... {END} to write the tables between")
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return f"{head}{BEGIN}\n\n{tables()}\n\n{END}{tail}"


if __name__ == "__main__":
    page = Path(sys.argv[1])
    page.write_text(rewritten(page.read_text()))
