"""The reconciliation counted in arrays indexed by record, in this process: each record has one place in every
array, found from its key's block and its seq (a key's block spans the seqs 0 to the highest the acknowledgement
log has: the generator numbers each key's records from 0), so each table is read once, in order, and every count
is a scatter into those arrays: no hashing of identities, no sort of the rows. It answers the plan the SQL text
answers (sql.py), with results of the same shape; reconciliations.py turns either into the checker's.

The identities a block cannot hold (a key or seq beyond what was sent, a seq written as text, no key) each get a
place of their own after the blocks, in the order first seen. The first places of a hop's deliveries are kept
where the checker reads them (a record delivered more than once, or never sent); the notable records' other
columns are the SQL's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from harness.checker.eras import Chunk, Recreation, needed
from harness.checker.periods import period_length_s, slot_of
from harness.checker.read_ahead import read_ahead
from harness.checker.summary.identities import ORDINARY_SEQS, source_batches
from harness.checker.summary.sources import Source
from harness.checker.summary.sql import (
    AT_RISK,
    FIRST_AFTER,
    LATENCIES,
    LOGGED,
    NOTABLE,
    PARTITION_PLACE,
    SENDINGS,
    SENT,
    TOTALS,
    HopTables,
    Plan,
    delivered_table,
    dropped_table,
    first_egress,
    late_result,
    stored_table,
)
from harness.errors import BeyondDense, HarnessError

Blocked = tuple[np.ndarray, np.ndarray]  # places, and which of them a block holds (Places.in_blocks)
NONE = np.iinfo(np.int64).max  # no place yet
NOWHERE = -1  # no copy in a topic (first_partitions)
SPARE = 1 << 10  # places made ready beyond the blocks for the identities they cannot hold
SPARSEST = 4  # places per record sent beyond which the seqs are not dense enough for blocks
CHUNK = 1 << 22  # the places the order check takes at a time (whole keys)
ORDINAL_BITS = 29  # a kept line: its rank's three marks above its ordinal in the log (uint32)


def _numpy(column: pa.ChunkedArray | pa.Array, fill) -> np.ndarray:
    return pc.fill_null(column, fill).to_numpy(zero_copy_only=False)


class Places:
    """Each record's place: a block of seqs 0 to the highest sent per key of the acknowledgement log, in the order
    the keys were first seen, then one place per other identity (key, seq, seq_text)."""

    def __init__(self, keys: dict[str, int], highest: np.ndarray):
        self.codes, self.keys = keys, np.array(list(keys), dtype=object)
        self.highest = highest
        self.base = np.concatenate([[0], np.cumsum(highest + 1)]).astype(np.int64)
        self.blocks = int(self.base[-1])
        self.others: dict[tuple, int] = {}
        self.names: list[tuple] = []

    @property
    def size(self) -> int:
        return self.blocks + len(self.names)

    @staticmethod
    def of_sent(source: Source) -> tuple[Places, int, int]:
        """The blocks of the acknowledgement log's keys, and the lowest and highest event time its lines say (one
        pass over its keys, seqs and times)."""
        codes: dict[str, int] = {}
        highest = np.zeros(0, np.int64)
        rows, low, high = 0, None, None
        for batch in read_ahead(source_batches(source)):
            if batch.num_rows:
                times = batch.column("event_ms").to_numpy()
                low = int(times.min()) if low is None else min(low, int(times.min()))
                high = int(times.max()) if high is None else max(high, int(times.max()))
            code = key_codes(batch.column("key"), codes, grow=True)
            seq, plain = _plain(batch, code)
            if len(highest) < len(codes):
                highest = np.concatenate([highest, np.full(len(codes) - len(highest), -1, np.int64)])
            np.maximum.at(highest, code[plain], seq[plain])
            rows += batch.num_rows
        places = Places(codes, highest)
        if places.blocks > SPARSEST * rows + CHUNK:
            raise BeyondDense(
                f"the dense engine counts each key's records by seq from 0; these {rows:,} lines would take "
                f"{places.blocks:,} places (seqs this sparse): use --engine spark"
            )
        return places, low or 0, high or 0

    def in_blocks(self, batch: pa.RecordBatch) -> Blocked:
        """The places of the rows whose identity a block holds. It only reads what of_sent made, so the reader
        thread works it out while the caller counts the batch before (the key coding is a third of the counting)."""
        code = key_codes(batch.column("key"), self.codes, grow=False)
        seq, plain = _plain(batch, code)
        plain[plain] &= seq[plain] <= self.highest[code[plain]]
        places = np.empty(batch.num_rows, np.int64)
        places[plain] = self.base[code[plain]] + seq[plain]
        return places, plain

    def of(self, batch: pa.RecordBatch, blocked: Blocked | None = None) -> np.ndarray:
        """The place of each row's record (a new one for an identity seen the first time); `blocked`: in_blocks'."""
        places, plain = blocked or self.in_blocks(batch)
        odd = np.flatnonzero(~plain)
        if len(odd):
            taken = pa.array(odd)
            names = zip(*(batch.column(c).take(taken).to_pylist() for c in ("key", "seq", "seq_text")))
            places[odd] = [self._other(name) for name in names]
        return places

    def _other(self, name: tuple) -> int:
        if name not in self.others:
            self.others[name] = self.blocks + len(self.names)
            self.names.append(name)
        return self.others[name]

    def identities(self, places: np.ndarray) -> pa.Table:
        """(key, seq, seq_text) of each place, as the SQL's results give them."""
        places = np.asarray(places, np.int64)
        dense = places < self.blocks
        code = np.searchsorted(self.base, places[dense], side="right") - 1
        keys = np.empty(len(places), dtype=object)
        seqs = np.zeros(len(places), np.int64)
        texts = np.full(len(places), None, dtype=object)
        keys[dense], seqs[dense] = self.keys[code], places[dense] - self.base[code]
        seq_known = dense.copy()
        for i in np.flatnonzero(~dense):
            keys[i], seq, texts[i] = self.names[places[i] - self.blocks]
            seq_known[i] = seq is not None
            seqs[i] = seq if seq is not None else 0
        return pa.table(
            {
                "key": pa.array(keys, pa.string()),
                "seq": pa.array(seqs, pa.int64(), mask=~seq_known),
                "seq_text": pa.array(texts, pa.string()),
            }
        )


def key_codes(key: pa.Array, codes: dict[str, int], grow: bool) -> np.ndarray:
    """Each row's key code (-1: no key, or one not known and not `grow`n)."""
    encoded = pc.dictionary_encode(key)
    names = encoded.dictionary.to_pylist()
    if grow:
        for name in names:
            codes.setdefault(name, len(codes))
    lookup = np.array([codes.get(name, -1) for name in names] + [-1], np.int64)  # [-1]: a null key's
    return lookup[_numpy(encoded.indices, -1)]


def _plain(batch: pa.RecordBatch, code: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's seq, and whether its identity is an ordinary one of a known key (a block could hold it)."""
    seq = _numpy(batch.column("seq"), -1).astype(np.int64)
    text = pc.is_null(batch.column("seq_text")).to_numpy(zero_copy_only=False)
    return seq, text & (code >= 0) & (seq >= 0) & (seq < ORDINARY_SEQS)


@dataclass
class Arrays:
    """Per-place arrays, grown as places are given to identities the blocks cannot hold."""

    places: Places
    fills: dict[str, int] = field(default_factory=dict)
    arrays: dict[str, np.ndarray] = field(default_factory=dict)

    def new(self, name: str, dtype, fill=0) -> None:
        self.fills[name] = fill
        self.arrays[name] = np.full(self.places.blocks + SPARE, fill, dtype)

    def fit(self) -> None:
        """Room for every place given so far."""
        size = self.places.size
        for name, array in self.arrays.items():
            if len(array) < size:
                grown = np.full(size + max(SPARE, size - self.places.blocks), self.fills[name], array.dtype)
                grown[: len(array)] = array
                self.arrays[name] = grown

    def __getitem__(self, name: str) -> np.ndarray:
        return self.arrays[name]

    def drop(self, name: str) -> np.ndarray:
        """The array, kept by the caller alone, at the size of the places given (views of what is dropped here)."""
        self.fills.pop(name)
        return self.arrays.pop(name)[: self.places.size]

    def at_size(self, name: str) -> np.ndarray:
        return self.arrays[name][: self.places.size]


def _count(arrays: Arrays, name: str, places: np.ndarray) -> None:
    """One more row at each of `places` (a count of uint16: more than 65,535 copies of a record are refused)."""
    counts = arrays[name]
    np.add.at(counts, places, np.ones(len(places), counts.dtype))


def _counted(arrays: Arrays, name: str, rows: int) -> None:
    if int(arrays.at_size(name).sum(dtype=np.int64)) != rows:  # a count wrapped past its type's top
        raise HarnessError("a record has more than 65,535 rows in one table: use --engine spark")


def line_ranks(batch: pa.RecordBatch, first: int) -> np.ndarray:
    """The ranks of a batch of the acknowledgement log's lines, the first of them its line number `first` (each line
    its own: the lowest of a record's is the line kept)."""
    marks = (batch.column("line_rank").to_numpy() >> 60).astype(np.uint32)
    return (marks << ORDINAL_BITS) | np.arange(first, first + batch.num_rows, dtype=np.uint32)


@dataclass
class Sent:
    """The acknowledgement log counted: per place its lines, whether any says acknowledged, whether any has no
    offset, and the kept line (the lowest rank, identities.py): its ordinal and marks, event time and lateness."""

    base: int  # the kept lines' event times are kept less this (in 32 bits where their span allows)
    ordinals: list[tuple[int, int]] = field(default_factory=list)  # per batch: first line's ordinal, its pos
    lines: int = 0

    def count(self, arrays: Arrays, places: np.ndarray, batch: pa.RecordBatch) -> None:
        n = batch.num_rows
        pos = batch.column("pos").to_numpy()
        if n and pos[-1] - pos[0] != n - 1:  # a batch of a folder's segment: rows in a row
            raise HarnessError("the acknowledgement log's batches do not hold its rows in a row")
        if self.lines + n >= 1 << ORDINAL_BITS:
            raise HarnessError(f"more than {1 << ORDINAL_BITS:,} acknowledgement lines: use --engine spark")
        if n:
            self.ordinals.append((self.lines, int(pos[0])))
        rank = line_ranks(batch, self.lines)
        self.lines += n
        _count(arrays, "lines", places)
        np.maximum.at(arrays["acked"], places, batch.column("acked").to_numpy().astype(np.uint8))
        no_offset = (batch.column("off").to_numpy() < 0).astype(np.uint8)
        np.maximum.at(arrays["no_offset"], places, no_offset)
        kept = arrays["kept"]
        np.minimum.at(kept, places, rank)
        won = kept[places] == rank  # each rank is one line's: one winner per place at most
        arrays["event_ms"][places[won]] = batch.column("event_ms").to_numpy()[won] - self.base
        arrays["late"][places[won]] = batch.column("late").to_numpy()[won].astype(np.uint8)

    def event_ms(self, arrays: Arrays, places: np.ndarray) -> np.ndarray:
        """The kept lines' event times at `places` (or where a mask of every place is true)."""
        return arrays.at_size("event_ms")[places].astype(np.int64) + self.base

    def ranks(self, kept: np.ndarray) -> np.ndarray:
        """The kept lines' ranks as the SQL gives them (marks << 60, plus the line's pos)."""
        ordinal = (kept & ((1 << ORDINAL_BITS) - 1)).astype(np.int64)
        firsts = np.array([o for o, _ in self.ordinals], np.int64)
        pos0 = np.array([p for _, p in self.ordinals], np.int64)
        batch = np.searchsorted(firsts, ordinal, side="right") - 1
        return ((kept >> ORDINAL_BITS).astype(np.int64) << 60) + pos0[batch] + ordinal - firsts[batch]


@dataclass
class Arrivals:
    """The first egress's first arrivals tallied (latency per whole ms and the time within the downtimes), and
    the first arrival at any egress after each boundary."""

    downtimes: list[tuple[int, int]]
    after: list[int]
    tallied: list[pd.DataFrame] = field(default_factory=list)
    first_after: list[int | None] = field(default_factory=list)

    def __post_init__(self):
        self.first_after = [None] * len(self.after)

    def any_after(self, time_ms: np.ndarray) -> None:
        for k, ms in enumerate(self.after):
            later = time_ms[time_ms > ms]
            if len(later) and (self.first_after[k] is None or later.min() < self.first_after[k]):
                self.first_after[k] = int(later.min())

    def firsts(self, sent_log: Sent, arrays: Arrays, places: np.ndarray, arrived: np.ndarray, event_ms: np.ndarray):
        """First arrivals at `places`: the event time the egress recorded, else the kept line's; none for a late
        kept line, or a record with no time known."""
        lines = arrays["lines"][places] > 0
        sent = np.where(event_ms >= 0, event_ms, sent_log.event_ms(arrays, places))
        timed = ((event_ms >= 0) | lines) & ~(lines & (arrays["late"][places] == 1))
        arrived, sent = arrived[timed], sent[timed]
        waiting = np.zeros(len(sent), np.int64)
        for start, end in self.downtimes:
            waiting += np.maximum(np.minimum(arrived, end) - np.maximum(sent, start), 0)
        latency = arrived - sent
        if not len(latency):
            return
        low = int(latency.min())
        if int(latency.max()) - low < 1 << 22:  # a histogram by offset from the lowest (one record a slot if not)
            records = np.bincount(latency - low)
            waited = np.bincount(latency - low, weights=waiting).astype(np.int64)  # exact below 2**53 ms a batch
            taken = np.flatnonzero(records)
            latency, records, waiting = taken + low, records[taken], waited[taken]
        else:
            records = np.ones(len(latency), np.int64)
        self.tallied.append(pd.DataFrame({"latency_ms": latency, "records": records, "waiting_ms": waiting}))

    def results(self) -> dict[str, pa.Table]:
        frame = pd.concat(self.tallied).groupby("latency_ms").sum() if self.tallied else None
        latencies = pa.table(
            {
                "latency_ms": pa.array([] if frame is None else frame.index.to_numpy(), pa.int64()),
                "records": pa.array([] if frame is None else frame.records.to_numpy(), pa.int64()),
                "waiting_ms": pa.array([] if frame is None else frame.waiting_ms.to_numpy(), pa.int64()),
            }
        )
        out = {LATENCIES: latencies}
        if self.after:
            out[FIRST_AFTER] = pa.table(
                {f"after{k}": pa.array([ms], pa.int64()) for k, ms in enumerate(self.first_after)}
            )
        return out


def _place(batch: pa.RecordBatch, hop: HopTables) -> np.ndarray:
    """Each delivery's place in the order the hop is judged in (sql.py _at)."""
    if hop.topic_order:
        return batch.column("part").to_numpy() * PARTITION_PLACE + batch.column("off").to_numpy()
    return batch.column("pos").to_numpy()


class Dense:
    """One run's counts: the plan's tables read once each, then its results."""

    def __init__(self, views: dict[str, Source], plan: Plan):
        self.views, self.plan = views, plan
        self.places, low, high = Places.of_sent(views[SENT])
        self.arrays = Arrays(self.places)
        narrow = high - low < 1 << 31
        self.sent = Sent(base=low if narrow else 0)
        self.event_type = np.int32 if narrow else np.int64
        self.arrivals = Arrivals(plan.downtimes, plan.after)
        self.at_risk: list[np.ndarray] = []
        self.firsts: list[dict[str, tuple[np.ndarray, np.ndarray]]] = []  # per hop, table: (places, first places)
        self.dropped: list[np.ndarray] = []
        self.headless: dict[int, int] = {}  # per hop looked at for the source's header: its sent copies without it
        self.results: dict[str, pa.Table] = {}

    def count(self) -> dict[str, pa.Table]:
        arrays = self.arrays
        for name, dtype, fill in [
            ("lines", np.uint16, 0),
            ("acked", np.uint8, 0),
            ("no_offset", np.uint8, 0),
            ("kept", np.uint32, np.iinfo(np.uint32).max),
            ("event_ms", self.event_type, 0),
            ("late", np.uint8, 0),
        ]:
            arrays.new(name, dtype, fill)
        rows = 0
        for batch, blocked in self.read_placed(SENT):
            places = self._placed(batch, blocked, SENT)
            self.sent.count(arrays, places, batch)
            rows += batch.num_rows
        _counted(arrays, "lines", rows)
        egress = first_egress(self.plan.hops)
        for i, hop in enumerate(self.plan.hops):
            self._delivered(i, hop, egress == i)
            if hop.stored:
                self._stored(i)
            dropped = [self._placed(batch) for batch in source_batches(self.views[dropped_table(i)])]
            self.dropped.append(np.unique(np.concatenate([np.zeros(0, np.int64), *dropped])))
        self._totals_and_notable()
        self.results[SENDINGS] = self._sendings()
        logged = self.places.highest >= 0
        self.results[LOGGED] = pa.table(
            {"key": pa.array(self.places.keys[logged], pa.string()), "seq": pa.array(self.places.highest[logged])}
        )
        if egress is not None:
            self.results.update(self.arrivals.results())
        if self.plan.at_risk:
            self.results[AT_RISK] = self.places.identities(
                np.unique(np.concatenate([np.zeros(0, np.int64), *self.at_risk]))
            )
        return self.results

    def read_placed(self, table: str) -> Iterator[tuple[pa.RecordBatch, Blocked]]:
        """A table's batches, each with its rows' places in blocks, both made in the reader thread."""
        return read_ahead((batch, self.places.in_blocks(batch)) for batch in source_batches(self.views[table]))

    def _placed(self, batch: pa.RecordBatch, blocked: Blocked | None = None, table: str | None = None) -> np.ndarray:
        """The places of a batch's rows, the arrays fitted to them; the rows at risk noted (`table`: its name)."""
        places = self.places.of(batch, blocked)
        self.arrays.fit()
        for part, low, high in self.plan.at_risk.get(table, []) if table else []:
            off = batch.column("off").to_numpy()
            risky = (batch.column("part").to_numpy() == part) & (off >= low) & (off < high)
            self.at_risk.append(places[risky])
        return places

    def _delivered(self, i: int, hop: HopTables, timed_firsts: bool) -> None:
        """Hop i's deliveries: their count per place, the first place of each, the first arrivals (at the first
        egress) and those after each boundary (at any egress), and the records delivered below a seq before them."""
        arrays, name = self.arrays, delivered_table(i)
        counts, first = f"d{i}", f"d{i}_first"
        arrays.new(counts, np.uint16)
        arrays.new(first, np.int64, NONE)
        in_order, last, rows = True, -1, 0
        for batch, blocked in self.read_placed(name):
            places, at = self._placed(batch, blocked, name), _place(batch, hop)
            rows += batch.num_rows
            _count(arrays, counts, places)
            np.minimum.at(arrays[first], places, at)
            if hop.header:  # the copies of records sent (a line in the log) without the header
                without = batch.column("headless").to_numpy().astype(bool) & (arrays["lines"][places] > 0)
                self.headless[i] = self.headless.get(i, 0) + int(np.count_nonzero(without))
            if hop.egress:
                self.arrivals.any_after(batch.column("time_ms").to_numpy())
            if not batch.num_rows:
                continue
            in_order = in_order and at[0] >= last and bool(np.all(at[1:] >= at[:-1]))
            last = max(last, int(at[-1]))
            if timed_firsts and in_order:  # read in its order: a row at its record's first place now stays first
                self._firsts(places, at, batch)
        _counted(arrays, counts, rows)
        if timed_firsts and not in_order:  # read again, each record's first place known
            self.arrivals.tallied.clear()
            for batch, blocked in self.read_placed(name):
                self._firsts(self.places.of(batch, blocked), _place(batch, hop), batch)
        firsts = arrays.drop(first)
        if any(hop_index == i for hop_index, _ in self.plan.placed):  # where each record's first copy is, kept
            arrays.new(f"t{i}", np.int16, NOWHERE)
            first_partitions(firsts, arrays[f"t{i}"])
        delivered = arrays.at_size(counts)
        lines = arrays.at_size("lines")
        self.results[late_result(i)] = self._late(delivered, firsts, hop.per_partition)
        noted = np.flatnonzero((delivered > 1) | ((delivered > 0) & (lines == 0)))
        self.firsts.append({"d": (noted, firsts[noted])})

    def _firsts(self, places: np.ndarray, at: np.ndarray, batch: pa.RecordBatch) -> None:
        first = self.arrays[f"d{first_egress(self.plan.hops)}_first"][places] == at
        time_ms, event_ms = (batch.column(c).to_numpy()[first] for c in ("time_ms", "event_ms"))
        self.arrivals.firsts(self.sent, self.arrays, places[first], time_ms, event_ms)

    def _stored(self, i: int) -> None:
        arrays, counts, first = self.arrays, f"s{i}", f"s{i}_first"
        arrays.new(counts, np.uint16)
        arrays.new(first, np.int64, NONE)
        rows = 0
        for batch, blocked in self.read_placed(stored_table(i)):
            places = self._placed(batch, blocked)
            rows += batch.num_rows
            _count(arrays, counts, places)
            np.minimum.at(arrays[first], places, batch.column("pos").to_numpy())
        _counted(arrays, counts, rows)
        firsts = arrays.drop(first)
        noted = np.flatnonzero(arrays.at_size(counts) > 1)
        self.firsts[i]["s"] = (noted, firsts[noted])

    def _late(self, delivered: np.ndarray, firsts: np.ndarray, per_partition: bool) -> pa.Table:
        """The first deliveries of ordinary records whose seq is below the highest of their key (and partition, per
        partition) delivered before them (sql.py _reordered), a chunk of whole keys at a time."""
        places = self.places
        by_code: dict[int, list[tuple[int, int]]] = {}  # ordinary identities no block holds, by key code
        unsent: dict[str, int] = {}  # their keys the acknowledgement log does not have: codes after its keys'
        for (key, seq, text), slot in places.others.items():
            if (
                delivered[slot] > 0
                and key is not None
                and text is None
                and seq is not None
                and 0 <= seq < ORDINARY_SEQS
            ):
                known = places.codes.get(key)
                code = known if known is not None else unsent.setdefault(key, len(places.codes) + len(unsent))
                by_code.setdefault(code, []).append((slot, seq))
        found = []
        for c0, c1 in key_runs(places.highest + 1):
            low, high = int(places.base[c0]), int(places.base[c1])
            slots = np.flatnonzero(delivered[low:high] > 0) + low
            code = np.searchsorted(places.base, slots, side="right") - 1
            extra = [(c, slot, seq) for c in list(by_code) if c0 <= c < c1 for slot, seq in by_code.pop(c)]
            found.append(_late_rows(*_with(slots, code, slots - places.base[code], extra), firsts, per_partition))
        extra = [(c, slot, seq) for c, members in by_code.items() for slot, seq in members]  # keys never sent
        if extra:
            found.append(_late_rows(*_with(*(np.zeros(0, np.int64),) * 3, extra), firsts, per_partition))
        slots, at, after = (np.concatenate([f[k] for f in found] or [np.zeros(0, np.int64)]) for k in range(3))
        identities = places.identities(slots)
        return identities.append_column("place", pa.array(at, pa.int64())).append_column(
            "after_seq", pa.array(after, pa.int64())
        )

    def _totals_and_notable(self) -> None:
        """The totals, and the notable records (any hop other than one copy, or not acknowledged, or not with one
        line with an offset, or dropped by design): sql.py _totals and _ordinary."""
        arrays, hops = self.arrays, self.plan.hops
        lines = arrays.at_size("lines")
        acked = arrays.at_size("acked")
        sent = lines > 0
        seen = sent.copy()
        ordinary = (lines == 1) & (acked == 1) & (arrays.at_size("no_offset") == 0)
        totals = {
            "acked": int(np.count_nonzero(sent & (acked == 1))),
            "unknown": int(np.count_nonzero(sent & (acked == 0))),
        }
        for i, hop in enumerate(hops):
            delivered = arrays.at_size(f"d{i}")
            seen |= delivered > 0
            seen[self.dropped[i]] = True
            ordinary &= delivered == 1
            ordinary[self.dropped[i]] = False
            totals[f"copies{i}"] = int(delivered[sent].sum(dtype=np.int64))
            totals[f"distinct{i}"] = int(np.count_nonzero(sent & (delivered > 0)))
            if hop.stored:
                stored = arrays.at_size(f"s{i}")
                seen |= stored > 0
                ordinary &= stored == 1
            if hop.egress or hop.stored:
                kept = arrays.at_size(f"s{i}") if hop.stored else delivered
                totals[f"kept{i}"] = int((kept[sent & (kept > 1)].astype(np.int64) - 1).sum())
            if hop.header:
                totals[f"headless{i}"] = self.headless.get(i, 0)
        totals = {"records": int(np.count_nonzero(seen)), **totals}
        self.results[TOTALS] = pa.table({k: pa.array([v], pa.int64()) for k, v in totals.items()})
        notable = np.flatnonzero(seen & ~ordinary)
        columns = {
            "lines": lines[notable].astype(np.int64),
            "acked": acked[notable].astype(np.int64),
            "kept": np.where(lines[notable] > 0, self.sent.ranks(arrays.at_size("kept")[notable]), 0),
        }
        for i, hop in enumerate(hops):
            columns[f"d{i}"] = arrays.at_size(f"d{i}")[notable].astype(np.int64)
            columns[f"d{i}_at"] = _at_places(self.firsts[i]["d"], notable)
            columns[f"x{i}"] = np.isin(notable, self.dropped[i]).astype(np.int64)
            if hop.stored:
                columns[f"s{i}"] = arrays.at_size(f"s{i}")[notable].astype(np.int64)
                columns[f"s{i}_at"] = _at_places(self.firsts[i]["s"], notable)
        table = self.places.identities(notable)
        for name, values in columns.items():
            table = table.append_column(name, pa.array(values, pa.int64()))
        self.results[NOTABLE] = table

    def era_rows(self, made: list[Recreation]) -> pa.Table:
        """The records the causes of the source's re-creations read besides the notable ones (eras.py)."""
        return self.places.identities(needed(made, self.acknowledged))

    def acknowledged(self) -> Iterator[Chunk]:
        """The kept lines that say acknowledged (the loader's rows of the records sent), in send order, a batch at a
        time: partition, offset, event time, ordinal in the log, place."""
        kept, line = self.arrays["kept"], 0
        for batch, blocked in self.read_placed(SENT):
            places = self.places.of(batch, blocked)
            mine = (kept[places] == line_ranks(batch, line)) & (batch.column("acked").to_numpy() == 1)
            ordinals = np.arange(line, line + batch.num_rows, dtype=np.int64)[mine]
            line += batch.num_rows
            columns = (batch.column(c).to_numpy()[mine] for c in ("part", "off", "event_ms"))
            yield (*columns, ordinals, places[mine])

    def sent_places(self, low: int, high: int) -> np.ndarray:
        """The places from `low` to `high` of records with a line in the acknowledgement log."""
        return np.flatnonzero(self.arrays.at_size("lines")[low:high] > 0) + low

    def sent_chunks(self) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """The records sent, CHUNK places at a time (whole arrays of temporaries at 50M records took 1.7 GB): their
        kept line's event time and lateness, and whether acknowledged."""
        arrays, size = self.arrays, self.places.size
        for low in range(0, size, CHUNK):
            sent = self.sent_places(low, min(low + CHUNK, size))
            yield self.sent.event_ms(arrays, sent), arrays["late"][sent], arrays["acked"][sent].astype(np.int64)

    def _sendings(self) -> pa.Table:
        """The records sent, by their kept line's event time, per period (sql.py _sendings)."""
        start = end = first = None  # the first on-time event time known, the last known, the first known
        for event_ms, late, _ in self.sent_chunks():
            known = event_ms > 0
            if known.any():
                on_time = event_ms[known & (late == 0)]
                first = min(first, int(event_ms[known].min())) if first is not None else int(event_ms[known].min())
                end = max(end, int(event_ms[known].max())) if end is not None else int(event_ms[known].max())
                if len(on_time):
                    start = min(start, int(on_time.min())) if start is not None else int(on_time.min())
        empty = {"slot": [], "acked": [], "unknown": [], "start_ms": [], "end_ms": [], "length_ms": []}
        if end is None:
            return pa.table({k: pa.array(v, pa.int64()) for k, v in empty.items()})
        start = start if start is not None else first
        length = period_length_s(max(end - start, self.plan.planned_ms)) * 1000
        last = (end - start) // length
        counted, acks = np.zeros(last + 2, np.int64), np.zeros(last + 2, np.int64)
        for event_ms, _, acked in self.sent_chunks():
            slot = slot_of(event_ms, start, end, length)
            counted += np.bincount(slot, minlength=last + 2)
            acks += np.bincount(slot, weights=acked, minlength=last + 2).astype(np.int64)
        slots = np.flatnonzero(counted)
        n = len(slots)
        return pa.table(
            {
                "slot": pa.array(slots, pa.int64()),
                "acked": pa.array(acks[slots], pa.int64()),
                "unknown": pa.array(counted[slots] - acks[slots], pa.int64()),
                "start_ms": pa.array([start] * n, pa.int64()),
                "end_ms": pa.array([end] * n, pa.int64()),
                "length_ms": pa.array([length] * n, pa.int64()),
            }
        )


def _at_places(firsts: tuple[np.ndarray, np.ndarray], notable: np.ndarray) -> np.ndarray:
    """The first places kept (`firsts`: sorted places, their first places) of the notable places (0: not kept)."""
    kept, at = firsts
    found = np.searchsorted(kept, notable)
    hit = found < len(kept)
    hit[hit] &= kept[found[hit]] == notable[hit]
    out = np.zeros(len(notable), np.int64)
    out[hit] = at[found[hit]]
    return out


def first_partitions(firsts: np.ndarray, out: np.ndarray) -> None:
    """Per place, the partition of its record's first copy in a topic (its first place there) into `out` (NOWHERE
    there already), CHUNK places at a time (at 50M places the whole array's temporaries took 0.8 GB)."""
    for low in range(0, len(firsts), CHUNK):
        first = firsts[low : low + CHUNK]
        has = np.flatnonzero(first != NONE)
        out[low + has] = first[has] // PARTITION_PLACE


def key_runs(sizes: np.ndarray):
    """(first key, end key) of runs of whole keys of at most CHUNK (of their `sizes`: places, or what they take), or
    one key, larger."""
    start, total = 0, 0
    for code, size in enumerate(sizes.tolist()):
        if total and total + size > CHUNK:
            yield start, code
            start, total = code, 0
        total += size
    if total or start < len(sizes):
        yield start, len(sizes)


def _with(slots, code, seq, extra: list[tuple[int, int, int]]):
    """The chunk's delivered places with `extra` (code, place, seq) among them, in key then seq order."""
    if not extra:
        return slots, code, seq
    c, p, s = (np.array(v, np.int64) for v in zip(*extra))
    slots, code, seq = np.concatenate([slots, p]), np.concatenate([code, c]), np.concatenate([seq, s])
    order = np.lexsort((seq, code))
    return slots[order], code[order], seq[order]


def _late_rows(slots, code, seq, firsts, per_partition):
    """(places, first places, highest seq before) of the late ones among a chunk's delivered records (in key, then
    seq order): a record is late when a higher seq of its group has an earlier first place, so a group has one
    exactly when its first places, in seq order, fall somewhere; those groups' records are then ordered by place
    for the highest seq before each."""
    none = (np.zeros(0, np.int64),) * 3
    if not len(slots):
        return none
    at = firsts[slots]
    group = code * ((int(at.max()) // PARTITION_PLACE) + 1) + at // PARTITION_PLACE if per_partition else code
    if np.any(group[1:] < group[:-1]):  # a key's partitions interleaved: each group's records together
        together = np.argsort(group, kind="stable")
        slots, group, seq, at = slots[together], group[together], seq[together], at[together]
    falls = (at[1:] < at[:-1]) & (group[1:] == group[:-1])
    suspects = np.unique(group[1:][falls])
    if not len(suspects):
        return none
    rows = np.flatnonzero(np.isin(group, suspects))
    order = rows[np.lexsort((at[rows], group[rows]))]
    g = group[order]
    before = pd.Series(seq[order]).groupby(g).cummax().groupby(g).shift(1, fill_value=-1).to_numpy()
    late = seq[order] < before
    chosen = order[late]
    return slots[chosen], at[chosen], before[late]
