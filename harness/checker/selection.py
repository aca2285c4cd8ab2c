"""A restricted load's records: which rows the loader keeps when an engine has counted every record where it lies
and the check needs only the rows of those with anything to say (harness/checker/summary/)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd
import pyarrow as pa

from harness.checker.record_ids import RecordIds
from harness.checker.rid_sets import Members


@dataclass(frozen=True)
class Selection:
    """The records to keep, by their rids in `ids`: the RecordIds the whole check names records with (the engine's
    results and every table the loader reads)."""

    ids: RecordIds
    rids: np.ndarray

    @classmethod
    def nothing(cls) -> Selection:
        """No record: every table empty, the rest of the run directory (its pipeline, history, progress) read, and
        every record's identity named as the whole load names it (each row is read: the order they are first seen in
        orders the report's records)."""
        return cls(RecordIds(pa.array([], pa.string())), np.array([], np.int64))

    @cached_property
    def _members(self) -> Members:
        return Members(self.rids)

    def mask(self, rid: np.ndarray) -> np.ndarray:
        return self._members.of(rid)

    def rows(self, table: pa.Table) -> pa.Table:
        """A segment's or a block's rows (with key and seq) of the selected records. Every row's identity is named
        (RecordIds.of_rows), as a whole load names them."""
        keep = self.mask(self.ids.of_rows(table))
        return table if keep.all() else table.filter(pa.array(keep))

    def frame(self, frame: pd.DataFrame) -> pd.DataFrame:
        return frame[self.mask(frame.rid.to_numpy())].copy()  # a frame of its own: the readers go on filling it


def selected(selection: Selection | None, frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` (rows with a rid), only the selected records' rows (all of them without a selection)."""
    return frame if selection is None else selection.frame(frame)
