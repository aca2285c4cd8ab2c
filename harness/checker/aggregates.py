"""A running aggregate judged against the records sent (contract/aggregates.py): per group, each value column the
output ends with (update mode: the group's last value written; increments: its rows combined) against the value the
acknowledged records give, and each value written against the values the job's batches could have made.

A group whose value differs is explained by records, or said not to be:

    over        batches of the job counted twice: the records of the group they read, added again, give the value
                (a replayed batch counted twice into a running total: duplicated in state)
    short       batches' records of the group not counted give it (lost), or none at all (the group missing); a
                value that is a record's newest value (last) held though newer records came: those newer ones lost
    unknown     records whose delivery is unknown (never acknowledged) would explain it: not judged
    unexplained neither: a value no records make
    phantom     a group no record sent has
    open        (append mode) a window not written, that ends after the job's last watermark: not yet due

The batches tried: each set of the suspects (those a kill caught in flight, replayed after the restart), then
each batch alone. Without batches that explain it, a count column still says how many records were counted twice
or not at all; a value no count says, and no batch explains, is unexplained. In update mode each value written is
one the group had after one of the job's batches (its records up to that batch), written once; the same value
written again is a copy (a duplicated delivery); one no batch gives, of a group that ends right, is unexplained
(counted as a phantom: a wrong value a reader saw for a while). Pure functions over frames:
the check (harness/checker/checks/aggregates.py) reads the evidence."""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from contract.aggregates import INCREMENTS
from harness.checker.reconcile import Counts, verdict

EXACT, OVER, SHORT, UNKNOWN, UNEXPLAINED, PHANTOM, OPEN = (
    "exact",
    "over",
    "short",
    "unknown",
    "unexplained",
    "phantom",
    "open",
)
STATUSES = (EXACT, OVER, SHORT, UNKNOWN, UNEXPLAINED, PHANTOM, OPEN)
NO_BATCH = -1  # a record no batch of the job's progress is known to have read
MOST_SUSPECTS = 6  # suspect batches whose every set is tried (64 sets)


@dataclass(frozen=True)
class Group:
    """One group's judgement: its values found and expected (column -> value), the batch explaining a difference
    and the records it names ("key:seq"), how many records it makes lost or counted twice."""

    group: str
    status: str
    found: dict
    expected: dict
    batches: tuple[int, ...] = ()
    records: tuple[str, ...] = ()
    lost: int | None = 0
    doubled: int | None = 0


@dataclass(frozen=True)
class Written:
    """The values written (update mode): rows, copies of a value written before, values no batch gives."""

    rows: int
    copies: int | None
    unexplained: int | None
    examples: tuple[str, ...] = ()  # a few unexplained ones: "group: {column: value}"
    groups: frozenset = frozenset()  # the groups of the unexplained ones (each ends right)


@dataclass(frozen=True)
class Judgement:
    groups: list[Group]
    written: Written
    acked: int
    unknown: int
    statuses: dict = field(default_factory=dict)  # status -> groups
    dropped: int = 0  # (record, window) pairs the job's watermark dropped, by design

    @property
    def counts(self) -> Counts:
        """Record-level counts: records lost and counted twice (None where a group's are not known), copies of
        values written, phantom and unexplained groups as phantom."""
        lost = [g.lost for g in self.groups]
        doubled = [g.doubled for g in self.groups]
        strange = sum(1 for g in self.groups if g.status in (PHANTOM, UNEXPLAINED))
        strange += len(self.written.groups)  # a wrong value a reader saw for a while, of a group that ends right
        undecided = any(g.status == UNKNOWN for g in self.groups)
        return Counts(
            acked=self.acked,
            unknown=self.unknown,
            lost=None if undecided or None in lost else sum(lost),
            duplicated_deliveries=self.written.copies,
            duplicated_in_state=None if undecided or None in doubled else sum(doubled),
            phantom=strange,
            reordered=0,
            dropped=self.dropped,
        )

    @property
    def verdict(self) -> str:
        return verdict(self.counts)


def group_labels(frame: pd.DataFrame, fields: list[str]) -> pd.Series:
    """Each row's group as text: its one field's value, or the JSON list of its fields' values."""
    if len(fields) == 1:
        return frame[fields[0]].map(_scalar_text)
    return pd.Series(
        [json.dumps([_scalar_text(v) for v in row]) for row in frame[fields].itertuples(index=False)],
        index=frame.index,
        dtype=object,
    )


def _scalar_text(value) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return "null" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def number(value) -> float | None:
    """A value as a number (text holding one too), None where it is none."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return None if isinstance(value, float) and math.isnan(value) else float(value)
    try:
        return float(str(value))
    except ValueError:
        return None


def scalar(value) -> float | str | None:
    """A value as compared: a number where it is one (text holding one too), else its text (None: null)."""
    found = number(value)
    if found is not None or value is None or isinstance(value, float):
        return found
    return str(value).lower() if isinstance(value, bool) else str(value)


def computed(records: pd.DataFrame, values: dict) -> pd.DataFrame:
    """Each group's value of each column (contract/aggregates.py) over `records` (group, and the fields): count of
    records or of a field's non-null values, sum, average, minimum and maximum of its non-null values, the value
    of its newest record (the last in `records`' order, the order they were sent)."""
    out = {}
    grouped = records.groupby("group", sort=False)
    for column, spec in values.items():
        if spec["field"] is None:
            out[column] = grouped.size().astype(float)
            continue
        if spec["op"] == "last":
            newest = records[spec["field"]].map(scalar).groupby(records["group"], sort=False)
            out[column] = newest.agg(lambda s: s.iloc[-1])
            continue
        numbers = records[spec["field"]].map(number)
        by = numbers.groupby(records["group"], sort=False)
        out[column] = {"count": by.count, "sum": by.sum, "avg": by.mean, "min": by.min, "max": by.max}[spec["op"]]()
        if spec["op"] == "count":
            out[column] = out[column].astype(float)
    return pd.DataFrame(out)


def _same(found: dict, expected: dict) -> bool:
    return all(_close(found.get(c), expected.get(c)) for c in expected)


def _close(a, b) -> bool:
    if a is None or b is None or (isinstance(b, float) and math.isnan(b)):
        return (a is None or isinstance(a, float) and math.isnan(a)) == (
            b is None or isinstance(b, float) and math.isnan(b)
        )
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    return abs(a - b) <= 1e-4 + 1e-12 * abs(b)


def final_values(rows: pd.DataFrame, values: dict, mode: str) -> dict[str, dict]:
    """Each group's values as a reader sees them at the end: its last row written (rows in write order), or in
    increments mode its rows combined (counts and sums added, the least minimum, the greatest maximum)."""
    found: dict[str, dict] = {}
    for group, mine in rows.groupby("group", sort=False):
        if mode != INCREMENTS:
            last = mine.iloc[-1]
            found[group] = {c: scalar(last[c]) for c in values}
            continue
        combined = {}
        for column, spec in values.items():
            numbers = [n for n in mine[column].map(number) if n is not None]
            op = {"count": sum, "sum": sum, "min": min, "max": max}[spec["op"]]
            combined[column] = op(numbers) if numbers else None
        found[group] = combined
    return found


def judge(
    records: pd.DataFrame,
    rows: pd.DataFrame,
    aggregate: dict,
    suspects: tuple[int, ...] = (),
    state: pd.DataFrame | None = None,
    due: set[str] | None = None,
) -> Judgement:
    """`records`: the records sent that the job aggregates (group, the fields, acked, batch, name "key:seq"; with
    windows, each once per window, `late` where the watermark dropped it from that window, by design);
    `rows`: the values the output was written, in write order (group, a column per value); `suspects`: the batches
    a kill caught in flight; `state`: the output's rows at the end where it keeps them apart from what was written
    (a table's; None: a topic's reader reads `rows`); `due`: in append mode, the groups not yet due (their window
    still open), which are not judged where absent."""
    values = aggregate["values"]
    sent = records.drop_duplicates("name")
    late = records["late"].to_numpy(bool) if "late" in records.columns else np.zeros(len(records), bool)
    records = records[~late]
    acked, unsure = records[records.acked], records[~records.acked]
    expected = computed(acked, values)
    found = final_values(rows if state is None else state, values, aggregate["mode"])
    tried = _candidates(suspects, acked.batch.to_numpy())
    groups = [
        Group(str(g), OPEN, {}, _row(expected, g))
        if g not in found and g in (due or ())
        else _group(
            str(g), found.get(g), _row(expected, g), acked[acked.group == g], unsure[unsure.group == g], values, tried
        )
        for g in expected.index
    ]
    groups += [Group(str(g), PHANTOM, v, {}, lost=0, doubled=0) for g, v in found.items() if g not in expected.index]
    statuses = {s: sum(1 for g in groups if g.status == s) for s in STATUSES}
    exact = {g.group for g in groups if g.status == EXACT}
    written = _written(acked, rows, values, exact) if aggregate["mode"] != INCREMENTS else Written(len(rows), 0, 0)
    return Judgement(groups, written, int(sent.acked.sum()), int((~sent.acked).sum()), statuses, int(late.sum()))


def _row(frame: pd.DataFrame, group) -> dict:
    return {c: scalar(v) for c, v in frame.loc[group].items()}


def _candidates(suspects: tuple[int, ...], batches: np.ndarray) -> list[tuple[int, ...]]:
    """The sets of batches tried, in order: each non-empty set of the suspects (the smaller first), then each batch
    alone."""
    suspects = tuple(sorted(set(suspects)))[:MOST_SUSPECTS]
    sets = [s for n in range(1, len(suspects) + 1) for s in itertools.combinations(suspects, n)]
    return sets + [(int(b),) for b in np.unique(batches) if b != NO_BATCH and (int(b),) not in sets]


def _group(
    group: str,
    found: dict | None,
    expected: dict,
    mine: pd.DataFrame,
    unsure: pd.DataFrame,
    values: dict,
    tried: list[tuple[int, ...]],
) -> Group:
    """One group judged: exact, or the first explanation a set of batches gives, or what a count column says."""
    if found is None:
        return Group(group, SHORT, {}, expected, records=_names(mine), lost=len(mine), doubled=0)
    if _same(found, expected):
        return Group(group, EXACT, found, expected)
    if len(unsure) and _same(found, _row(computed(pd.concat([mine, unsure]), values), group)):
        return Group(group, EXACT, found, expected)  # the records of unknown delivery were delivered
    if all(spec["op"] == "last" for spec in values.values()):  # no batch counted twice changes a newest value
        stale = _stale(found, mine, values)
        if stale is None:
            return Group(group, UNKNOWN if len(unsure) else UNEXPLAINED, found, expected)
        return Group(group, SHORT, found, expected, records=_names(stale), lost=len(stale), doubled=0)
    for batches in tried:
        taken = mine.batch.isin(batches).to_numpy()
        if not taken.any():
            continue
        read = mine[taken]
        if _same(found, _row(computed(pd.concat([mine, read]), values), group)):
            return Group(group, OVER, found, expected, batches, _names(read), lost=0, doubled=len(read))
        rest = mine[~taken]
        if len(rest) and _same(found, _row(computed(rest, values), group)):
            return Group(group, SHORT, found, expected, batches, _names(read), lost=len(read), doubled=0)
    if len(unsure):
        return Group(group, UNKNOWN, found, expected, lost=None, doubled=None)
    return _by_count(group, found, expected, values)


def _stale(found: dict, mine: pd.DataFrame, values: dict) -> pd.DataFrame | None:
    """Of a group whose every value is its newest record's (last): the records sent after the newest one whose values
    it holds, which a stale value lost (None: no record of the group holds them)."""
    held = np.ones(len(mine), bool)
    for column, spec in values.items():
        held &= np.array([_close(found.get(column), scalar(v)) for v in mine[spec["field"]]], bool)
    if not held.any():
        return None
    return mine.iloc[int(np.flatnonzero(held)[-1]) + 1 :]


def _by_count(group: str, found: dict, expected: dict, values: dict) -> Group:
    """A difference no batch explains: a count of records says how many were counted twice or not at all (the
    other columns agreeing with that direction); otherwise unexplained."""
    counted = next((c for c, spec in values.items() if spec["op"] == "count" and spec["field"] is None), None)
    if counted is None or found.get(counted) is None:
        return Group(group, UNEXPLAINED, found, expected)  # counted as a phantom: a value no records make
    difference = int(round(found[counted] - expected[counted]))
    if difference > 0:
        return Group(group, OVER, found, expected, lost=0, doubled=difference)
    if difference < 0:
        return Group(group, SHORT, found, expected, lost=-difference, doubled=0)
    return Group(group, UNEXPLAINED, found, expected)


def _names(records: pd.DataFrame) -> tuple[str, ...]:
    return tuple(records["name"].astype(str))


def _written(acked: pd.DataFrame, rows: pd.DataFrame, values: dict, exact: set[str]) -> Written:
    """Each value written (update mode) against the values its group had after each batch: a copy of one written
    before, or, of a group that ends `exact`, one no batch gives (None where the records' batches are not known;
    the values of a group that ends wrong follow from what its status explains)."""
    if not len(rows):
        return Written(0, 0, 0)
    columns = list(values)
    key = rows[["group", *columns]].apply(lambda r: (r["group"], *(_rounded(scalar(r[c])) for c in columns)), axis=1)
    copies = int(key.duplicated().sum())
    if (acked.batch == NO_BATCH).any():
        return Written(len(rows), copies, None)
    possible = set()
    for batch in np.unique(acked.batch.to_numpy()):
        upto = computed(acked[acked.batch <= batch], values)
        possible |= {(g, *(_rounded(upto.at[g, c]) for c in columns)) for g in upto.index}
    strange = [k for k in key.drop_duplicates() if k[0] in exact and k not in possible]
    examples = tuple(f"{k[0]}: {dict(zip(columns, k[1:]))}" for k in strange[:3])
    return Written(len(rows), copies, len(strange), examples, frozenset(k[0] for k in strange))


def _rounded(value) -> float | str | None:
    if isinstance(value, str) or value is None:
        return value
    return None if math.isnan(value) else round(float(value), 4)
