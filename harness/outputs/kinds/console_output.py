"""What a job's console sink prints (`writeStream.format("console")`), read from its driver's output: each batch's
header (`Batch: N`) and the rows of its table, every row a delivery and, the console being append-only, part of
what a reader has seen (its state). Judged only where every row was shown whole: the sink prints `numRows` rows a
batch (20 unless told) and cuts a value at 20 characters (unless `truncate` is false); a batch shown in part
(`only showing top N rows`) or an identity cut short makes the output unread, the history saying why. The scenario
refuses a console output whose job's code sets no `numRows` (harness/scenario/applications.py)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from contract.applications import TABLE_OUTPUT, UNREAD
from contract.egress import AUDIT, MAIN_QUERY, RECORDS, STATE
from contract.identity import IdentityReader
from harness.evidence.checkpoint import BatchTimes
from harness.field import Field
from harness.outputs.kind import IDENTITY, WRITTEN_BY, OutputKind, OutputSpec
from harness.outputs.tables import identity_text, record_export

BATCH = re.compile(r"Batch: (\d+)")
CUT = re.compile(r"only showing top (\d+) rows?")
TRUNCATED = 20  # the width a value is cut to (17 characters and "...") unless truncate is false
INTEGER = re.compile(r"-?\d+")


def printed(text: str) -> tuple[list[tuple[int, dict]], str | None]:
    """The rows the console sink printed, each with its batch, in order; and why they cannot be judged (a batch
    shown in part), or None. Lines the driver's log interleaves (its logger's) are skipped; a table cut by a kill
    keeps the rows printed before it."""
    rows: list[tuple[int, dict]] = []
    batch, header, why = None, None, None
    for line in text.splitlines():
        found = BATCH.fullmatch(line.strip())
        if found:
            batch, header = int(found[1]), None
        elif batch is not None and line.startswith("|") and line.rstrip().endswith("|"):
            cells = [cell.strip() for cell in line.rstrip()[1:-1].split("|")]
            if header is None:
                header = cells
            elif len(cells) == len(header):
                rows.append((batch, {name: _value(cell) for name, cell in zip(header, cells)}))
        elif batch is not None and CUT.match(line.strip()) and why is None:
            why = f"batch {batch} was shown in part ({line.strip()}): give the console sink a larger numRows"
    return rows, why


def _value(cell: str):
    return int(cell) if INTEGER.fullmatch(cell) else None if cell in ("null", "NULL") else cell


def _parse(spec: OutputSpec) -> dict:
    return {"console": True, "identity": spec.identity(), "written_by": spec.writer()}


class ConsoleProbe:
    """When the job last printed a row (what an in-flight kill waits for): the log read on from where the last look
    ended, a line of a table dated by the file's modification time."""

    def __init__(self, log: Path):
        self.log, self.read_to, self.latest = log, 0, 0

    def latest_ms(self) -> int:
        try:
            with open(self.log, "rb") as fh:
                fh.seek(self.read_to)
                new = fh.read()
                modified = os.fstat(fh.fileno()).st_mtime_ns // 1_000_000
        except OSError:
            return self.latest
        whole = new[: new.rfind(b"\n") + 1]  # a line still being written is read at the next look
        self.read_to += len(whole)
        if any(line.startswith(b"|") for line in whole.splitlines()):
            self.latest = modified
        return self.latest

    def delivered(self) -> int | None:
        return None  # the rows counted include each table's header

    def close(self) -> None:
        pass


class ConsoleSink:
    """The console of the application writing it, in one run: its driver's log, read once the drivers stopped."""

    def __init__(self, run, name: str, settings: dict):
        self.run, self.name, self.settings = run, name, settings

    @property
    def writer(self) -> str:
        return self.settings["written_by"]

    @property
    def log(self) -> Path:
        return self.run.layout.log(f"streamlet-{self.writer}")

    def prepare(self) -> None:
        return None

    def placeholders(self) -> dict[str, str]:
        return {}

    def reader(self):
        return self.settings["identity"], self._records

    def _printed(self) -> tuple[list[tuple[int, dict]], str | None]:
        return printed(self.log.read_text(errors="replace") if self.log.exists() else "")

    def _records(self) -> list[dict]:
        return [{"value": row} for _, row in self._printed()[0]]

    def probe(self) -> ConsoleProbe:
        return ConsoleProbe(self.log)

    def export(self) -> dict:
        from pipelines.audit import ExportedEvidence  # here: its Arrow and NumPy only where a run exports

        rows, why = self._printed()
        read = IdentityReader(self.settings["identity"])
        found = [(batch, read({"value": row})) for batch, row in rows]
        cut = next((ident for _, ident in found if _cut(ident)), None)
        if cut and why is None:
            why = f"an identity was cut short ({cut!r}): set the console sink's truncate to false"
        if why:
            record_export(self.run, self.name, {}, why, observed=UNREAD, log=str(self.log))
            return {}
        # A row is dated by its batch's planning (offsets/N): a replay's copy, printed again, by its first attempt's.
        planned = {batch: start for start, batch, _ in BatchTimes(self.run.layout.checkpoints(self.writer)).spans}
        deliveries = [
            (MAIN_QUERY, batch, identity_text(key), identity_text(seq), -1, "{}", None, -1, -1, planned.get(batch, -1))
            for batch, (key, seq) in found
        ]
        state = [(identity_text(key), identity_text(seq), -1, None, -1, "{}", None) for _, (key, seq) in found]
        ExportedEvidence.of(self.run.driver_paths(self.name)).write({AUDIT: deliveries, STATE: state})
        exported = {"rows": len(state), "inserts": len(deliveries)}
        record_export(self.run, self.name, exported, None, log=str(self.log))
        return exported


def _cut(identity: tuple) -> bool:
    return any(isinstance(part, str) and len(part) == TRUNCATED and part.endswith("...") for part in identity)


KIND = OutputKind(
    "console",
    TABLE_OUTPUT,
    "what the job's console sink prints (format('console')), read from its driver's output",
    marker="console",
    fields=(
        Field("console", bool, None, "true: the rows the job's console sink prints", required=True),
        IDENTITY,
        WRITTEN_BY,
    ),
    parse=_parse,
    evidence=lambda settings: RECORDS,
    sink=ConsoleSink,
    needs_in_code=(
        r"numRows",
        "its job's console sink prints 20 rows a batch unless told: give it .option('numRows', N), N above any "
        "batch's size (and truncate false where an identity is longer than 20 characters)",
    ),
)
