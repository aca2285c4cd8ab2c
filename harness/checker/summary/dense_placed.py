"""The records a lost record absent from a topic's recording is placed by (causes._placed), named by the dense
engine so that a check loading only the notable records loads them too: for each record acknowledged at an offset
with no copy in the topic whose key's records around it went to a partition where the recording missed offsets a
retention shrink deleted, its key's nearest records there by seq (causes.key_homes), and the records with a copy in
that partition from its source partition at the offsets nearest below and above its own. With those loaded, each
such record is placed as the whole evidence places it."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from harness.checker.summary.dense_engine import NOWHERE, Dense, key_runs
from harness.errors import BeyondDense

HOMES_SHARE = 8  # the homes are found over 1/8 of the engine's chunk of places at a time (a dozen temporaries each)


def neighbour_rows(dense: Dense, placed: tuple[tuple[int, tuple[int, ...]], ...]) -> pa.Table:
    """The identities of the records placing the absent ones, for each (topic hop, its partitions with missed
    offsets in a shrink) of `placed`."""
    # acknowledged at an offset: the records causes._placed reads (a pass over the log: a per-place array kept while
    # counting instead cost 50 MB at 50M records, 0.05 GiB from the 2 GiB the check has)
    sourced = np.zeros(dense.places.size, bool)
    for _, offset, _, _, places in dense.acknowledged():
        sourced[places[offset >= 0]] = True
    found = [_neighbours(dense, hop, partitions, sourced) for hop, partitions in placed]
    return dense.places.identities(np.unique(np.concatenate([np.zeros(0, np.int64), *found])))


def _neighbours(dense: Dense, hop: int, partitions: tuple[int, ...], sourced: np.ndarray) -> np.ndarray:
    where = dense.arrays.at_size(f"t{hop}")  # first_partitions; each absent record looked at becomes -2 - its home
    return np.concatenate([_homes(dense, where, sourced, partitions), _by_offset(dense, where)])


def _around(present: np.ndarray, index: np.ndarray, none_after: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the `index` of the nearest `present` row at or before it (-1: none) and at or after it
    (`none_after`: none)."""
    before = np.maximum.accumulate(np.where(present, index, -1))
    after = np.minimum.accumulate(np.where(present, index, none_after)[::-1])[::-1]
    return before, after


def _homes(dense: Dense, where: np.ndarray, sourced: np.ndarray, partitions: tuple[int, ...]) -> np.ndarray:
    """Each absent record's home (causes.key_homes: its key's nearest record with a copy, before it by seq, else
    after), kept in `where` where it is one of `partitions`; the places of the records homing them."""
    places, found = dense.places, []
    for k0, k1 in key_runs((places.highest + 1) * HOMES_SHARE):
        low, high = int(places.base[k0]), int(places.base[k1])
        code = np.repeat(np.arange(k0, k1), places.highest[k0:k1] + 1)  # each place's key
        present = (where[low:high] >= 0) & sourced[low:high]
        before, after = _around(present, np.arange(low, high), high)
        home = np.where(before >= places.base[code], before, np.where(after < places.base[code + 1], after, -1))
        absent = np.flatnonzero(sourced[low:high] & (where[low:high] == NOWHERE) & (home >= 0))
        at = where[home[absent]]
        mine = np.isin(at, partitions)
        where[low + absent[mine]] = -2 - at[mine]
        found.append(home[absent[mine]])
    return np.concatenate([np.zeros(0, np.int64), *found])


def _by_offset(dense: Dense, where: np.ndarray) -> np.ndarray:
    """The records with a copy in each absent record's home from its source partition, nearest below and above its
    source offset: read in send order, where each source partition's offsets rise (otherwise the default check
    judges the run by numpy)."""
    last: dict[int, int] = {}  # per home and source partition: its last record with a copy so far
    waiting: set[int] = set()  # the groups with an absent record since that one
    highest: dict[int, int] = {}  # per source partition: its highest offset so far
    found = []
    for partition, offset, _, _, places in dense.acknowledged():
        known = offset >= 0
        partition, offset, places = partition[known], offset[known], places[known]
        _rising(partition, offset, highest)
        at = where[places]
        home = np.where(at >= 0, at, -2 - at)
        group = (home.astype(np.int64) << 32) | partition.astype(np.int64)
        keep = at != NOWHERE
        for g in np.unique(group[keep]).tolist():
            rows = np.flatnonzero(keep & (group == g))
            present = at[rows] >= 0
            before, after = _around(present, np.arange(len(rows)), len(rows))
            absent = np.flatnonzero(~present)
            below, above = before[absent], after[absent]
            found.append(places[rows[np.concatenate([below[below >= 0], above[above < len(rows)]])]])
            if (below < 0).any() and g in last:
                found.append(np.array([last[g]]))  # the one before, in a chunk before
            if g in waiting and present.any():
                found.append(places[rows[np.flatnonzero(present)[:1]]])  # the one after those absent in chunks before
            if present.any():
                last[g] = int(places[rows[np.flatnonzero(present)[-1]]])
                waiting.discard(g)
            if len(absent) and after[absent[-1]] == len(rows):
                waiting.add(g)
    return np.concatenate([np.zeros(0, np.int64), *found])


def _rising(partition: np.ndarray, offset: np.ndarray, highest: dict[int, int]) -> None:
    """Refuses (the default check then judges the run by numpy) a source partition whose offsets do not rise in the
    acknowledgement log's order: an absent record's neighbours are then not the records around it in that order."""
    for p in np.unique(partition).tolist():
        mine = offset[partition == p]
        if mine[0] <= highest.get(p, -1) or (len(mine) > 1 and np.any(mine[1:] <= mine[:-1])):
            raise BeyondDense(f"source partition {p}'s offsets do not rise in the acknowledgement log's order")
        highest[p] = int(mine[-1])
