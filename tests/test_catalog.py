"""The whole caveat catalog on real runs (about 20 minutes here): every scenario must show what the document it
names predicts. Behind the `catalog` marker, outside `make test` (tests/test_gate.py runs two of them there, with
their losses counted again from the raw evidence); `make test-caveats` runs it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_harness

pytestmark = [pytest.mark.e2e, pytest.mark.catalog]

CATALOG = Path(__file__).resolve().parent.parent / "scenarios" / "caveats" / "catalog.suite"


@pytest.mark.timeout(3600)
def test_every_caveat_of_the_catalog_shows_what_its_document_predicts(tmp_path):
    out = tmp_path / "caveats"
    result = run_harness("gate", str(CATALOG), "--out", str(out), timeout=3600)
    summary = json.loads((out / "summary.json").read_text())
    failed = {Path(r["scenario"]).stem: r.get("failed_expectations") for r in summary["scenarios"] if not r["passed"]}
    assert result.returncode == 0 and not failed, (failed, result.stdout[-3000:])
    print("\n".join(f"{Path(r['scenario']).stem}: {r['verdict']}" for r in summary["scenarios"]))
