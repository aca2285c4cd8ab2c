"""What a check adds to the report: a section, rendered alike by every writer (report.json, report.md, report.html,
junit.xml), so a new check is its module alone (harness/checker/checks/)."""

from __future__ import annotations

from dataclasses import dataclass, field

# What a section's data says of the outputs it judges that hold no records (a running aggregate's): their verdict and
# record counts (a Counts' fields, None where not counted), the run's end to end where no output holds records.
OUTPUTS_VERDICT, OUTPUTS_COUNTS = "outputs_verdict", "outputs_counts"


@dataclass(frozen=True)
class Section:
    """A titled part of the report: lines of text, then a table (a header and its rows; none: no table). A value
    that could not be measured is None, shown as "unknown". `data`: what the check's expectations read (report.json
    keeps it, the readers' renderings do not show it)."""

    title: str
    lines: tuple[str, ...] = ()
    header: tuple[str, ...] = ()
    rows: tuple[tuple, ...] = ()
    data: dict = field(default_factory=dict)

    def cells(self) -> list[list[str]]:
        """The rows as text, None as "unknown"."""
        return [["unknown" if value is None else str(value) for value in row] for row in self.rows]
