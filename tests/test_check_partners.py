"""The partners check (harness/checker/checks/partners.py) on a recorded run (the frozen chain) given a partners.csv:
its counts per partner topic are those counted here from the raw files (partners.csv and acks.csv); a damaged
partners.csv is one gap naming it, the rest of the check unchanged; a run without one has no Partners section."""

from __future__ import annotations

import csv
import random
from pathlib import Path

from harness.checker.check import check_run
from harness.evidence.partners import OUTCOMES, PARTNER_COLUMNS
from tests.evidence_helpers import chain_copy


def _acks(run: Path) -> list[dict]:
    with open(run / "acks.csv") as file:
        return list(csv.DictReader(file))


def _write_partners(run: Path) -> list[tuple]:
    """Each of the first 300 records sent answered by one of the others (a random outcome each, an answer sent for
    `answered` and `late`), some answers never acknowledged (a key no record has)."""
    sent, rng = _acks(run), random.Random(7)
    rows = []
    for i, record in enumerate(sent[:300]):
        outcome = rng.choice(list(OUTCOMES))
        answer = sent[300 + i] if i % 10 else {"key": "k-none", "seq": "0"}
        own = (answer["key"], answer["seq"]) if outcome in ("answered", "late") else ("", "")
        rows.append((record["key"], record["seq"], "payments", outcome, *own))
    with open(run / "partners.csv", "w", newline="") as file:
        csv.writer(file).writerows([PARTNER_COLUMNS, *rows])
    return rows


def test_the_partners_section_counts_what_partners_csv_and_the_acknowledgement_log_say(tmp_path):
    run = chain_copy(tmp_path, {})
    rows = _write_partners(run)
    acked = {(r["key"], r["seq"]) for r in _acks(run) if r["status"] == "acked"}
    data = check_run(run).sections["partners"].data["payments"]
    assert data["records"] == len(rows) == 300
    for outcome in OUTCOMES:
        assert data[outcome] == sum(r[3] == outcome for r in rows), outcome
    sent = [(r[4], r[5]) for r in rows if r[3] in ("answered", "late")]
    assert data["acknowledged"] == sum(s in acked for s in sent) < len(sent)


def test_a_damaged_partners_csv_is_a_gap_naming_it_and_a_run_without_one_has_no_partners_section(tmp_path):
    plain = check_run(chain_copy(tmp_path, {}))
    assert "partners" not in plain.sections
    for text in ('key,seq\n"k0001,\n', "key,seq\nk0001,3\n"):  # a line cut in its quotes; columns missing
        run = chain_copy(tmp_path, {})
        (run / "partners.csv").write_text(text)
        damaged = check_run(run)
        assert "partners" not in damaged.sections and damaged.outcome == plain.outcome
        assert [g for g in damaged.gaps if g.startswith("partners.csv: unreadable")], damaged.gaps
