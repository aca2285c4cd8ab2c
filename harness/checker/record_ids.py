"""Record identity: one int64 `rid` per record, the same in every table.

An ordinary record (a key, a seq from 0 to 2**40) has rid = key code * 2**40 + seq, key codes from one
dictionary built over every table, so every join and count downstream is a vectorized operation on integers;
any other (key, seq) a file can hold (a negative, huge, fractional or text seq, a missing key or seq) gets a
negative rid of its own, so it is that record or a phantom, never another record.
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

SEQ_BITS = 40
SEQ_MASK = (1 << SEQ_BITS) - 1


def rids(key_codes, seqs) -> np.ndarray:
    return (np.asarray(key_codes, dtype=np.int64) << SEQ_BITS) + np.asarray(seqs, dtype=np.int64)


def split_rid(rid) -> tuple[np.ndarray, np.ndarray]:
    """Key code and seq of ordinary rids (>= 0); alien rids (< 0) are named by RecordIds.name."""
    rid = np.asarray(rid, dtype=np.int64)
    return rid >> SEQ_BITS, rid & SEQ_MASK


MAX_KEY_CODE = (1 << (63 - SEQ_BITS)) - 1
INTEGER = re.compile(r"-?[0-9]+")
ORDINARY_TEXT = re.compile(r"-?[0-9]{1,18}")  # what the vectorized path reads as a whole number


class RecordIds:
    """One key dictionary and one record identity for every table, so the same record has the same rid
    everywhere and no two records share one."""

    def __init__(self, first: pa.Array):
        self.values = pc.unique(first.drop_null())
        self._aliens: dict[tuple, int] = {}  # (key text or None, seq as written or None) -> rid < 0
        self._alien_names: list[tuple] = []

    @property
    def keys(self) -> np.ndarray:
        return self.values.to_numpy(zero_copy_only=False)

    def codes(self, keys: pa.Array) -> np.ndarray:
        distinct = pc.unique(keys.drop_null())
        extra = pc.filter(distinct, pc.invert(pc.is_in(distinct, value_set=self.values)))
        if len(extra):
            self.values = pa.concat_arrays([self.values, extra.cast(self.values.type)])
        return pc.index_in(keys, value_set=self.values).fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)

    def ids(self, keys: pa.Array, seqs: pa.Array) -> np.ndarray:
        """rid per row: packed for ordinary rows (vectorized), an alien rid of its own for every other (key, seq)."""
        return self.identify(keys, seqs)[0]

    def identify(self, keys: pa.Array, seqs: pa.Array) -> tuple[np.ndarray, np.ndarray]:
        """(rids, key codes) per row: the key strings are coded once for both."""
        codes = self.codes(keys)
        if pa.types.is_integer(seqs.type):
            # a uint64 beyond int64 wraps negative: not ordinary
            seq = seqs.cast(pa.int64(), safe=False).fill_null(-1).to_numpy(zero_copy_only=False)
            ordinary = pc.is_valid(seqs).to_numpy(zero_copy_only=False)
        else:  # text, fractions, mixed: the integers among them are still ordinary
            text = seqs.cast(pa.string()) if not pa.types.is_null(seqs.type) else pa.nulls(len(seqs), pa.string())
            ordinary = pc.fill_null(pc.match_substring_regex(text, f"^{ORDINARY_TEXT.pattern}$"), False).to_numpy(
                zero_copy_only=False
            )
            seq = pc.if_else(pa.array(ordinary), text, "-1").cast(pa.int64()).to_numpy(zero_copy_only=False)
        ordinary &= (codes >= 0) & (codes <= MAX_KEY_CODE) & (seq >= 0) & (seq < (1 << SEQ_BITS))
        out = rids(np.where(ordinary, codes, 0), np.where(ordinary, seq, 0))
        odd = np.flatnonzero(~ordinary)
        if len(odd):
            key_list = keys.take(pa.array(odd)).to_pylist()
            seq_list = seqs.take(pa.array(odd)).to_pylist()
            out[odd] = [self.alien(k, v) for k, v in zip(key_list, seq_list)]
        return out, codes

    def of_rows(self, table: pa.Table) -> np.ndarray:
        """rid per row of a table with key and seq (and seq_text where a columnar recording found some seq that is not
        an integer: then every seq is read as text, each still its record's identity)."""
        if not table.num_rows:
            return np.array([], np.int64)
        seq = table["seq"].combine_chunks()
        if "seq_text" in table.column_names:
            seq = pc.coalesce(seq.cast(pa.string()), table["seq_text"].combine_chunks())
        return self.ids(table["key"].combine_chunks().cast(pa.string()), seq)

    @staticmethod
    def ordinary_text(seq: str) -> bool:
        """Whether a seq written as text is an ordinary record's (with a key)."""
        return ORDINARY_TEXT.fullmatch(seq) is not None and 0 <= int(seq) < (1 << SEQ_BITS)

    @staticmethod
    def alien_name(key, seq) -> tuple:
        """The name of a record that is not an ordinary one: its key as text, its seq a whole number where it is one."""
        if isinstance(seq, float) and seq.is_integer():
            seq = int(seq)
        if isinstance(seq, str) and INTEGER.fullmatch(seq.strip()):
            seq = int(seq)
        return (None if key is None else str(key), seq)

    def alien(self, key, seq) -> int:
        """The rid (< 0) of a record that is not an ordinary one, given the first time its name is seen."""
        name = self.alien_name(key, seq)
        if name not in self._aliens:
            self._aliens[name] = -1 - len(self._alien_names)
            self._alien_names.append(name)
        return self._aliens[name]

    def name(self, rid: int) -> tuple[str | None, object]:
        """(key, seq) as the evidence wrote them."""
        if rid < 0:
            return self._alien_names[-1 - rid]
        key, seq = (int(v[0]) for v in split_rid([rid]))
        return (str(self.values[key]) if key < len(self.values) else None), seq
