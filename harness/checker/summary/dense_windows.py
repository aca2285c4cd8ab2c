"""A windowed count's (key, window) cells counted by the dense engine, a block of keys at a time, and judged by the
rule of harness/checker/window_cells.py: only the totals and the anomalous cells come back.

The acknowledgement log's counts are in the engine's arrays already, by place, and a key's places are together
(dense_engine.py), so a block of keys' records gives its cells' acknowledged and unknown records by event time. The
counter's input is read once more: each copy's batch range says the watermark that filtered it, so each record keeps
how many of its windows (the earliest) a copy of it was dropped from. The egress's state and deliveries are read once
into a grid of every key's windows from the first event time's to the last's (a count and a number of deliveries per
cell); whatever falls outside it (a key never sent, a window outside the span, an event time not known) is tallied
apart, in a table.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Iterator

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from harness.checker.egress_readers import egress_blocks
from harness.checker.summary.dense_engine import CHUNK, SPARSEST, Dense, key_codes, key_runs, line_ranks
from harness.checker.summary.dense_placed import neighbour_rows
from harness.checker.summary.sources import Source
from harness.checker.summary.sql import (
    ERA_ROWS,
    NEIGHBOURS,
    SENT,
    WINDOW_CELLS,
    WINDOW_COUNTS,
    WINDOW_DELIVERIES,
    WINDOW_TOTALS,
    Plan,
    WindowPlan,
)
from harness.checker.window_cells import COLUMNS, CellTotals, judge
from harness.errors import BeyondDense, HarnessError

ABSENT = np.iinfo(np.int32).min  # a cell the egress's state has no count for
UNFILTERED = np.iinfo(np.int64).min  # the watermark of a copy no batch range read
CELLS = 1 << 19  # the cells a block of keys takes at most (or one key's): its temporaries, a few times this
TALLIES = ("acked", "unknown", "dropped")


class Grid:
    """Every known key's windows from `first_ms`, `windows` of them `slide_ms` apart: per cell the count stored
    (ABSENT: none) and the deliveries; the egress's rows outside it, in `apart`."""

    def __init__(self, keys: int, first_ms: int, windows: int, slide_ms: int):
        self.first_ms, self.windows, self.slide_ms = first_ms, windows, slide_ms
        self.count = np.full(keys * windows, ABSENT, np.int32)
        self.deliveries = np.zeros(keys * windows, np.uint16)
        self.apart: list[pd.DataFrame] = []

    def cells(self, code: np.ndarray, start_ms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each row's cell, and whether the grid holds it."""
        offset = start_ms - self.first_ms
        window = offset // self.slide_ms
        inside = (code >= 0) & (offset % self.slide_ms == 0) & (window >= 0) & (window < self.windows)
        return np.where(inside, code * self.windows + window, 0), inside

    def read(self, dense: Dense, state: Source, deliveries: Source) -> None:
        """The egress's deliveries and state, each in a thread of its own (reading SQLite is most of the time)."""
        with ThreadPoolExecutor(1) as pool:
            delivered = pool.submit(self._delivered, dense.places.codes, deliveries)
            self._stored(dense.places.codes, state)
            delivered.result()

    def _delivered(self, codes: dict[str, int], deliveries: Source) -> None:
        rows = 0
        for batch in _window_rows(deliveries, ("key", "window_start_ms")):
            cell, inside = self.cells(key_codes(batch.column("key"), codes, grow=False), batch.column(1).to_numpy())
            np.add.at(self.deliveries, cell[inside], np.ones(np.count_nonzero(inside), np.uint16))
            rows += int(np.count_nonzero(inside))
            self._apart(batch, ~inside, deliveries=1)
        if int(self.deliveries.sum(dtype=np.int64)) != rows:
            raise HarnessError("a window was delivered more than 65,535 times: use --engine numpy")

    def _stored(self, codes: dict[str, int], state: Source) -> None:
        for batch in _window_rows(state, ("key", "window_start_ms", "count")):
            cell, inside = self.cells(key_codes(batch.column("key"), codes, grow=False), batch.column(1).to_numpy())
            count = batch.column("count").to_numpy()
            if np.any((count[inside] <= ABSENT) | (count[inside] > np.iinfo(np.int32).max)):
                raise BeyondDense("a window's count beyond 32 bits")
            self.count[cell[inside]] = count[inside]
            self._apart(batch, ~inside, count=count)

    def _apart(self, batch: pa.RecordBatch, rows: np.ndarray, deliveries: int = 0, count=None) -> None:
        if not rows.any():
            return
        taken = pa.array(np.flatnonzero(rows))
        frame = pd.DataFrame(
            {
                "key": batch.column("key").take(taken).to_pylist(),
                "window_start_ms": batch.column("window_start_ms").to_numpy()[rows],
                "deliveries": deliveries,
                "count": count[rows] if count is not None else 0,
                "stored": count is not None,
            }
        )
        self.apart.append(frame)


def _window_rows(source: Source, columns: tuple[str, ...]) -> Iterator[pa.RecordBatch]:
    """The egress's rows of a window table, a block at a time (its numbers whole everywhere: else the numpy engine
    judges the run, as it reads anything)."""
    for block in egress_blocks(Path(source.db), source.sql, pa.table, keep=False):
        for name in columns[1:]:
            kind = block.schema.field(name).type
            if not (pa.types.is_integer(kind) or pa.types.is_null(kind)):
                raise BeyondDense(f"a window table's {name} is not a whole number everywhere")
        yield pa.record_batch(
            {c: block[c].combine_chunks() if c == "key" else _whole(block[c].combine_chunks()) for c in columns}
        )


def _whole(column: pa.Array) -> pa.Array:
    return pc.fill_null(column, 0).cast(pa.int64())


def _watermarks(ranges: tuple[tuple[int, int, int, int], ...]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per partition, the highest watermark of the batch ranges reading each offset, as a step function: the offsets
    where it changes, and its value from each (UNFILTERED: no range reads it). A copy read again by a later batch
    (a replay, a redeploy reading back) was dropped from a window if any batch reading it dropped it."""
    by_partition: dict[int, list[tuple[int, int, int]]] = {}
    for partition, start, end, mark in ranges:
        if start < end:
            by_partition.setdefault(partition, []).append((start, end, mark))
    steps = {}
    for partition, rows in by_partition.items():
        start, end, mark = (np.array(v, np.int64) for v in zip(*rows))
        breaks = np.unique(np.concatenate([start, end]))
        value = np.full(len(breaks), UNFILTERED, np.int64)
        for i in np.argsort(mark, kind="stable"):  # the highest painted last
            low, high = np.searchsorted(breaks, [start[i], end[i]])
            value[low:high] = mark[i]
        steps[partition] = (breaks, value)
    return steps


def _filtered_by(steps, partition: np.ndarray, offset: np.ndarray) -> np.ndarray:
    """Each copy's highest filtering watermark (UNFILTERED: not read by any batch range)."""
    found = np.full(len(offset), UNFILTERED, np.int64)
    for number, (breaks, value) in steps.items():
        mine = np.flatnonzero(partition == number)
        step = np.searchsorted(breaks, offset[mine], "right") - 1
        found[mine] = np.where(step >= 0, value[np.maximum(step, 0)], UNFILTERED)
    return found


class Windows:
    """One run's cells: counted, then judged a block of keys at a time."""

    def __init__(self, dense: Dense, plan: WindowPlan):
        self.dense, self.plan = dense, plan
        self.per = plan.size_ms // plan.slide_ms
        if self.per > 255:
            raise BeyondDense(f"{self.per} windows per record")
        self.dropped = np.zeros(dense.places.size, np.uint8)  # per place: its earliest windows dropped, how many
        self.totals = CellTotals()
        self.found: list[pd.DataFrame] = []
        self.apart: list[pd.DataFrame] = []

    def count(self) -> dict[str, pa.Table]:
        plan, dense = self.plan, self.dense
        if plan.reads is not None:
            self._read_dropped(plan.reads)
        self.others = self._other_places()
        grid = self._grid()
        grid.read(dense, dense.views[WINDOW_COUNTS], dense.views[WINDOW_DELIVERIES])
        for c0, c1 in self._blocks(grid.windows):
            self._block(grid, c0, c1)
        self._judge_apart(grid.apart)
        totals = pa.table({k: pa.array([v], pa.int64()) for k, v in vars(self.totals).items()})
        found = pd.concat(self.found, ignore_index=True) if self.found else None
        cells = {
            "key": pa.array([] if found is None else found.key.tolist(), pa.string()),
            "window_start_ms": pa.array([] if found is None else found.window_start_ms.to_numpy(), pa.int64()),
        }
        for name in COLUMNS:
            values = [] if found is None else found[name].to_numpy()
            cells[name] = pa.array(values, pa.bool_() if name == "phantom" else pa.int64())
        return {WINDOW_TOTALS: totals, WINDOW_CELLS: pa.table(cells)}

    def _event_ms(self, places: np.ndarray) -> np.ndarray:
        return self.dense.sent.event_ms(self.dense.arrays, places)

    def _read_dropped(self, table: str) -> None:
        """Per record, how many of its windows some copy the counter read was dropped from: the copies of the
        counter's input (of the acknowledgement log, each record's kept line), each by its batch range."""
        dense, steps = self.dense, _watermarks(self.plan.ranges)
        lines = 0
        for batch, blocked in dense.read_placed(table):
            places = dense.places.of(batch, blocked)
            if table == SENT:  # the kept line alone stands for the record in the source
                kept = line_ranks(batch, lines) == dense.arrays.at_size("kept")[places]
                lines += batch.num_rows
                batch, places = batch.filter(pa.array(kept)), places[kept]
            marks = _filtered_by(steps, batch.column("part").to_numpy(), batch.column("off").to_numpy())
            np.maximum.at(self.dropped, places, self._late_windows(self._event_ms(places), marks))

    def _late_windows(self, event_ms: np.ndarray, marks: np.ndarray) -> np.ndarray:
        """How many of each record's windows (the earliest) ended by the watermark `marks`."""
        size, slide = self.plan.size_ms, self.plan.slide_ms
        latest = event_ms // slide * slide  # the latest window's start; the j-th before it ends j slides earlier
        filtered = marks != UNFILTERED
        kept = np.zeros(len(marks), np.int64)  # the latest windows not dropped: ceil((latest + size - mark) / slide)
        kept[filtered] = -((marks[filtered] - latest[filtered] - size) // slide)
        return np.where(filtered, self.per - np.clip(kept, 0, self.per), 0).astype(np.uint8)

    def _grid(self) -> Grid:
        """The grid over every known key's windows from the first event time known to the last."""
        places, slide = self.dense.places, self.plan.slide_ms
        low = high = None
        for event_ms, _, _ in self.dense.sent_chunks():
            known = event_ms[event_ms > 0]
            if len(known):
                low = int(known.min()) if low is None else min(low, int(known.min()))
                high = int(known.max()) if high is None else max(high, int(known.max()))
        if low is None:
            return Grid(len(places.codes), 0, 0, slide)
        first = low // slide * slide - (self.per - 1) * slide
        windows = (high // slide * slide - first) // slide + 1
        if len(places.codes) * windows > SPARSEST * places.blocks + CHUNK:
            raise BeyondDense(f"{len(places.codes):,} keys over {windows:,} windows")
        return Grid(len(places.codes), first, windows, slide)

    def _blocks(self, windows: int) -> Iterator[tuple[int, int]]:
        """(first key, end key) of runs of whole keys whose places and cells (CELLS of them weighing as CHUNK places)
        stay within CHUNK, or one key."""
        return key_runs(self.dense.places.highest + 1 + windows * (CHUNK // CELLS))

    def _tallies(self, places: np.ndarray) -> Iterator[tuple[np.ndarray, dict[str, np.ndarray]]]:
        """Per window of the records at `places` (the j-th latest, for each j): its start, and each record's
        acknowledged, unknown and dropped (acknowledged, and dropped from it) as 0 or 1."""
        arrays, slide = self.dense.arrays, self.plan.slide_ms
        event_ms = self._event_ms(places)
        acked = arrays.at_size("acked")[places] == 1
        dropped = self.dropped[places]
        for j in range(self.per):
            start = event_ms // slide * slide - j * slide
            yield start, {"acked": acked, "unknown": ~acked, "dropped": acked & (j >= self.per - dropped)}

    def _block(self, grid: Grid, c0: int, c1: int) -> None:
        """The cells of keys c0 to c1: tallied, judged; those of the block's records outside the grid set apart."""
        places, windows = self.dense.places, grid.windows
        sent = self.dense.sent_places(int(places.base[c0]), int(places.base[c1]))
        code = np.searchsorted(places.base, sent, side="right") - 1
        others = [p for p in self.others if c0 <= p[1] < c1]
        if others:
            sent = np.concatenate([sent, np.array([p for p, _ in others], np.int64)])
            code = np.concatenate([code, np.array([c for _, c in others], np.int64)])
        cells = (c1 - c0) * windows
        tallies = {name: np.zeros(cells, np.int64) for name in TALLIES}
        for start, flags in self._tallies(sent):
            cell, inside = grid.cells(code, start)
            cell -= c0 * windows
            for name in TALLIES:
                tallies[name] += np.bincount(cell[inside & flags[name]], minlength=cells)
            if not inside.all():
                self._set_apart(places.keys[code[~inside]], start[~inside], {n: f[~inside] for n, f in flags.items()})
        count, delivered = grid.count[c0 * windows : c1 * windows], grid.deliveries[c0 * windows : c1 * windows]
        stored = count != ABSENT
        at = np.flatnonzero((tallies["acked"] + tallies["unknown"] > 0) | stored | (delivered > 0))
        starts = grid.first_ms + (at % max(windows, 1)) * grid.slide_ms
        codes = c0 + at // max(windows, 1)
        self._judged(codes, starts, *(tallies[n][at] for n in TALLIES), count[at], stored[at], delivered[at])

    def _other_places(self) -> list[tuple[int, int]]:
        """The places after the blocks with a line in the acknowledgement log, with their key's code; those without a
        key (no cell of the grid) set apart."""
        places, lines = self.dense.places, self.dense.arrays.at_size("lines")
        found, keyless = [], []
        for i, (key, _, _) in enumerate(places.names):
            place = places.blocks + i
            if lines[place] > 0:
                (found if key is not None else keyless).append((place, places.codes.get(key, -1)))
        if keyless:
            at = np.array([p for p, _ in keyless], np.int64)
            for start, flags in self._tallies(at):
                self._set_apart(np.full(len(at), None, dtype=object), start, flags)
        return found

    def _set_apart(self, keys: np.ndarray, start: np.ndarray, flags: dict[str, np.ndarray]) -> None:
        frame = pd.DataFrame({"key": keys, "window_start_ms": start})
        for name in TALLIES:
            frame[name] = flags[name].astype(np.int64)
        self.apart.append(frame)

    def _judge_apart(self, stored: list[pd.DataFrame]) -> None:
        """The cells outside the grid, from the records and the egress's rows set apart."""
        frames = [f for f in self.apart + stored if len(f)]
        if not frames:
            return
        rows = pd.concat(frames, ignore_index=True)
        for name in (*TALLIES, "count", "deliveries"):
            rows[name] = rows[name].fillna(0).astype(np.int64) if name in rows else 0
        rows["stored"] = rows["stored"].eq(True) if "stored" in rows else False  # a record's row: NaN
        cells = rows.groupby(["key", "window_start_ms"], dropna=False, sort=False).agg(
            {**{n: "sum" for n in (*TALLIES, "deliveries")}, "count": "sum", "stored": "any"}
        )
        cells = cells.reset_index()
        self._judged(
            cells.key.to_numpy(),
            cells.window_start_ms.to_numpy(),
            *(cells[n].to_numpy() for n in (*TALLIES, "count", "stored", "deliveries")),
        )

    def _judged(self, keys, starts, acked, unknown, dropped, count, stored, deliveries) -> None:
        """Cells judged (`keys`: their keys as text, or their key codes), the totals added, the anomalous kept."""
        judged = judge(
            acked, unknown, dropped, count, stored, deliveries, starts, self.plan.size_ms, self.plan.final_watermark_ms
        )
        self.totals.add(judged.totals)
        anomalous = judged.anomalous
        if anomalous.any():
            keys = keys[judged.judged][anomalous]
            if keys.dtype != object:
                keys = self.dense.places.keys[keys]
            frame = pd.DataFrame({"key": keys, "window_start_ms": starts[judged.judged][anomalous]})
            for name, values in judged.columns.items():
                frame[name] = values[anomalous]
            self.found.append(frame)


def run_dense(views: dict[str, Source], plan: Plan) -> dict[str, pa.Table]:
    """The dense engine: the records counted (dense_engine.py), the records a re-created source's causes read and
    those placing a record a recording missed (dense_placed.py), then a windowed count's cells, if the plan has
    them."""
    dense = Dense(views, plan)
    results = dense.count()
    if plan.recreations:
        results[ERA_ROWS] = dense.era_rows(list(plan.recreations))
    if plan.placed:
        results[NEIGHBOURS] = neighbour_rows(dense, plan.placed)
    if plan.windows is not None:
        results.update(Windows(dense, plan.windows).count())
    return results
