"""The values log (values/<writer>.csv): for each templated record sent, the fields the outputs' aggregates are
judged by (harness/checker/aggregates.py), written by the generator as it sends them (values/generator.csv, a
worker's values/generator-<w>.csv) and by the preflight for its canary (values/canary.csv). A line: the record's key
and seq, then each field's value as JSON text (null where the record has none). Written only where a scenario
declares an aggregate."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pandas as pd

VALUE_KEYS = ("key", "seq")  # then one column per field
GENERATOR_VALUES, CANARY_VALUES = "generator", "canary"  # the files' names: who wrote them


class ValueLog:
    """Appends the values of `fields` of each record noted to `path` (its header first)."""

    def __init__(self, path: Path, fields: list[str]):
        self.fields = list(fields)
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fresh = not Path(path).exists()
        self._file = open(path, "a", buffering=1, newline="")
        self._csv = csv.writer(self._file)
        if fresh:
            self._csv.writerow([*VALUE_KEYS, *self.fields])

    def note(self, key: str, seq: int, value: dict) -> None:
        self._csv.writerow([key, seq, *(json.dumps(value.get(name)) for name in self.fields)])

    def close(self) -> None:
        self._file.close()


def read_values(folder: Path, fields: list[str]) -> pd.DataFrame:
    """Every line of the values log: key (text), seq (int), then each of `fields` decoded from JSON (None where a file
    has no such column). OSError or ValueError naming the file that cannot be read."""
    frames = []
    for path in sorted(Path(folder).glob("*.csv")):
        text = path.read_text()
        whole = text[: text.rfind("\n") + 1]  # a last line without its end was cut by a kill
        frame = pd.read_csv(io.StringIO(whole), dtype=str, keep_default_na=False) if whole else pd.DataFrame()
        if any(c not in frame.columns for c in VALUE_KEYS):
            raise ValueError(f"{path.name}: no key and seq columns")
        complete = frame[frame["seq"].str.fullmatch(r"-?\d+")]
        decoded = {"key": complete["key"], "seq": complete["seq"].astype("int64")}
        for name in fields:
            column = complete[name] if name in complete.columns else pd.Series("null", index=complete.index)
            decoded[name] = column.map(_decoded)
        frames.append(pd.DataFrame(decoded))
    if not frames:
        raise FileNotFoundError(f"{folder}: no values log")
    return pd.concat(frames, ignore_index=True).drop_duplicates(["key", "seq"])


def _decoded(text: str):
    try:
        return json.loads(text)
    except ValueError:
        return None
