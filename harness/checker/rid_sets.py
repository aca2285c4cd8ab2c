"""Sets of rids (harness/checker/record_ids.py): how often each occurs, where each first occurs, which occur in
another set; the same answers as pandas' value_counts, duplicated and isin.

They are computed in a dense space when the records' keys and seqs fill one: code = key code * (highest seq + 1) +
seq, a bincount and a table lookup instead of hashing (about twenty times faster at a million records:
docs/performance.md). Where the space would be sparse (a seq far beyond the others, a phantom's), or an alien rid
(< 0) is among them, pandas' hashing gives the answer.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from harness.checker.record_ids import SEQ_BITS, SEQ_MASK, split_rid

SMALL = 10_000  # below this many rids in all, hashing is as quick
DENSEST = 8  # a space at most this many times the rids it holds (and at most MOST_CODES codes) is used
MOST_CODES = 1 << 28
MOST_MEMBERS = 1 << 27  # flags (bytes) a Members table may take


def _space(*arrays: np.ndarray) -> tuple[int, int] | None:
    """(stride, size) of the dense space the arrays' rids fill, or None: small, sparse, or some rid alien."""
    total = sum(len(a) for a in arrays)
    present = [a for a in arrays if len(a)]
    if total < SMALL or not present or min(int(a.min()) for a in present) < 0:
        return None
    # The largest key is the largest rid's (rids order by key first): only the seqs need extracting here.
    stride = max(int((a & SEQ_MASK).max()) for a in present) + 1
    size = ((max(int(a.max()) for a in present) >> SEQ_BITS) + 1) * stride
    return (stride, size) if size <= min(DENSEST * total + (1 << 20), MOST_CODES) else None


def _codes(rid: np.ndarray, stride: int) -> np.ndarray:
    """key x stride + seq, as rid - key x (2**SEQ_BITS - stride): one new array, the rest in place (at 10M rids 29 ms
    against 62-79 ms for the key and seq apart, then their product and sum: every new array is pages to fault in)."""
    code = rid >> SEQ_BITS
    code *= (1 << SEQ_BITS) - stride
    np.subtract(rid, code, out=code)
    return code


def _first_in_space(code: np.ndarray, size: int) -> np.ndarray:
    kind = np.int32 if len(code) < (1 << 31) else np.int64  # half the memory to touch
    position = np.arange(len(code), dtype=kind)
    first = np.full(size, len(code), dtype=kind)
    np.minimum.at(first, code, position)
    return first[code] == position


def first_occurrences(rid) -> np.ndarray:
    """Boolean mask: the first occurrence of each rid (as ~pandas' duplicated(keep="first"))."""
    rid = np.asarray(rid, dtype=np.int64)
    space = _space(rid)
    if space is None:
        return ~pd.Series(rid).duplicated().to_numpy()
    stride, size = space
    return _first_in_space(_codes(rid, stride), size)


def copies(rid: np.ndarray) -> pd.Series:
    """How many times each rid occurs, in the order each first occurs (as pandas' value_counts(sort=False))."""
    rid = np.asarray(rid, dtype=np.int64)
    space = _space(rid)
    if space is None:
        return pd.Series(rid).value_counts(sort=False)
    stride, size = space
    code = _codes(rid, stride)
    is_first = _first_in_space(code, size)
    counts = np.bincount(code, minlength=size)
    return pd.Series(counts[code[is_first]], index=pd.Index(rid[is_first]), name="count")


def isin(values, universe) -> np.ndarray:
    """Boolean mask: which of `values` occur in `universe`."""
    values, universe = np.asarray(values, dtype=np.int64), np.asarray(universe, dtype=np.int64)
    space = _space(values, universe)
    if space is None:
        return pd.Series(values).isin(pd.Index(universe)).to_numpy()
    stride, size = space
    table = np.zeros(size, dtype=bool)
    table[_codes(universe, stride)] = True
    return table[_codes(values, stride)]


def more_than_once(rid) -> np.ndarray:
    """Boolean mask: the rids that occur more than once, every occurrence (as pandas' duplicated(keep=False))."""
    rid = np.asarray(rid, dtype=np.int64)
    space = _space(rid)
    if space is None:
        return pd.Series(rid).duplicated(keep=False).to_numpy()
    stride, size = space
    code = _codes(rid, stride)
    return np.bincount(code, minlength=size)[code] > 1


class Members:
    """Which values are in `universe`, built once and asked of many blocks: a table of flags over the universe's own
    dense space where it takes at most MOST_MEMBERS of them (a few records among many, as a restricted load's: their
    space is that of the whole run), else a hash index."""

    def __init__(self, universe) -> None:
        universe = np.asarray(universe, dtype=np.int64)
        self._space = None
        if len(universe) and int(universe.min()) >= 0:
            stride = int((universe & SEQ_MASK).max()) + 1
            size = ((int(universe.max()) >> SEQ_BITS) + 1) * stride
            self._space = (stride, size) if size <= MOST_MEMBERS else None
        if self._space is None:
            self._index = pd.Index(pd.unique(universe))
            return
        stride, size = self._space
        self._table = np.zeros(size, dtype=bool)
        self._table[_codes(universe, stride)] = True

    def of(self, values) -> np.ndarray:
        """Boolean mask: which of `values` are in the universe."""
        values = np.asarray(values, dtype=np.int64)
        if self._space is None:
            return self._index.get_indexer(values) >= 0 if len(self._index) else np.zeros(len(values), bool)
        stride, size = self._space
        key, seq = split_rid(values)
        code = key * stride + seq
        inside = (values >= 0) & (seq < stride) & (code < size)  # a phantom's rid may lie beyond the space
        found = np.zeros(len(values), dtype=bool)
        found[inside] = self._table[code[inside]]
        return found


class Positions:
    """Where each rid of `universe` (distinct rids) stands in it, built once and looked up many times: a table over
    the dense space, or a hash index."""

    def __init__(self, universe) -> None:
        universe = np.asarray(universe, dtype=np.int64)
        self._space = _space(universe)
        if self._space is None:
            self._index = pd.Index(universe)
            return
        stride, size = self._space
        self._table = np.full(size, -1, dtype=np.int32 if len(universe) < (1 << 31) else np.int64)
        self._table[_codes(universe, stride)] = np.arange(len(universe))

    def of(self, values) -> np.ndarray:
        """Each value's position in the universe, -1 where it is not in it."""
        values = np.asarray(values, dtype=np.int64)
        if self._space is None:
            return self._index.get_indexer(values)
        stride, size = self._space
        key, seq = split_rid(values)
        code = key * stride + seq
        inside = (values >= 0) & (seq < stride) & (code < size)  # a phantom's rid may lie beyond the space
        found = np.full(len(values), -1, dtype=np.int64)
        found[inside] = self._table[code[inside]]
        return found
