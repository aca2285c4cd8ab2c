"""The names of the two forms a run's topic recordings take (harness/evidence/topics.py writes and describes them):
known here, apart from the writers and their Arrow, so that a scenario names a form without loading them."""

from __future__ import annotations

JSON_LINES = "json"
COLUMNAR = "columnar"
FORMATS = (JSON_LINES, COLUMNAR)
