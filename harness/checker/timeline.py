"""Time series for the report's plots, derived from the evidence.

One time base everywhere: seconds from the workload's start (the generator's start), as the
scenario's start_s and the console count; the drivers' start-up is before 0.

marks       drivers started, workload start and end, drained, run end (seconds)
throughput  rows read per second per streamlet (its batches' numInputRows, in bins)
lag         per streamlet: records in its input topics past its last committed end offsets,
            at each offset sample the runner took (history "offsets" events); 0 once drained
anomalies   lost records per bin of the time they should have been written (sent), extra copies
            per bin of the time they were written (where in the pipeline's time they happened),
            and per source partition
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from contract.query_events import QUERY_PROGRESS
from harness.checker.copies import ACCOUNTING
from harness.checker.hops import DUPLICATED, TALLIES
from harness.checker.load import Evidence
from harness.checker.offsets import committed_ends, offset_samples
from harness.checker.rid_sets import isin
from harness.checker.step import Context, Key, Step
from harness.checker.unfinished import LOST
from harness.evidence.history import DRAINED, PROCESS_STARTED, QUERY_FAILED

TIMELINE: Key[dict] = Key("timeline", dict, reported=True)  # the plots' series (the module's docstring)


def _first(history: list[dict], event: str, **fields) -> int | None:
    return next(
        (int(e["ts_ms"]) for e in history if e["event"] == event and all(e.get(k) == v for k, v in fields.items())),
        None,
    )


def run_start_ms(context: Context) -> int:
    """Time zero: the workload's start (the generator started), else the first event, else the first record sent
    (0: none known)."""
    history = context.evidence.history
    started = _first(history, PROCESS_STARTED, process="generator")
    if started is not None:
        return started
    if history:
        return int(history[0]["ts_ms"])
    return sent_span_ms(context)[0] or 0


def sent_span_ms(context: Context) -> tuple[int | None, int | None]:
    """When the first and the last record were sent: the first known event time of the records' kept lines (an
    on-time one where there is one) and the latest (None: none known; a damaged or cut line's time is 0), as the
    periods' grid has them (periods.py): from an engine's tally of the sendings when one counted."""
    tallied = context[TALLIES].sendings if context[TALLIES] is not None else None  # None: reconcile could not run
    return (tallied.start_ms, tallied.end_ms) if tallied else (None, None)


def _marks(evidence: Evidence, t0: int, end: int, last_sent: int | None) -> dict:
    """When the phases of the run happened, in seconds from the workload's start (None: not in the evidence)."""
    history = evidence.history
    points = {
        "drivers_started": next(
            (int(e["ts_ms"]) for e in history if e["event"] == PROCESS_STARTED and e.get("role") == "driver"), None
        ),
        "workload_started": _first(history, PROCESS_STARTED, process="generator"),
        "workload_ended": last_sent,
        "drained": _first(history, DRAINED),
        "ended": end,
    }
    return {name: None if ms is None else round((ms - t0) / 1000, 1) for name, ms in points.items()}


def _bin_s(duration_s: float) -> int:
    return max(1, int(duration_s // 120))


def _throughput(events: list[dict], t0: int, bin_s: int) -> dict:
    rows = [(e["ts_ms"], e["progress"].get("numInputRows", 0)) for e in events if e.get("event") == QUERY_PROGRESS]
    if not rows:
        return {"t": [], "rows_per_s": []}
    frame = pd.DataFrame(rows, columns=["ts", "rows"])
    bins = ((frame.ts - t0) // (bin_s * 1000)).astype(int)
    per_bin = frame.groupby(bins).rows.sum()
    full = per_bin.reindex(range(min(0, int(per_bin.index.min())), int(per_bin.index.max()) + 1), fill_value=0)
    return {"t": [int(i * bin_s) for i in full.index], "rows_per_s": [round(v / bin_s, 1) for v in full.to_numpy()]}


def _lag(events: list[dict], inputs: tuple[str, ...], samples: pd.DataFrame, t0: int) -> dict:
    """Sum over the streamlet's input partitions of log end - committed end offset, at each sample."""
    if samples.empty:
        return {"t": [], "records": []}
    done = committed_ends(events, inputs)
    mine = samples[samples.topic.isin(inputs)].sort_values("ts")
    if mine.empty:
        return {"t": [], "records": []}
    if len(done):
        done = done.sort_values("ts")
        mine = pd.merge_asof(mine, done, on="ts", by=["topic", "partition"], direction="backward")
    else:
        mine = mine.assign(committed=np.nan)
    mine["committed"] = mine.committed.fillna(mine.log_start)
    mine["lag"] = (mine.log_end - mine.committed).clip(lower=0)
    per_sample = mine.groupby("ts").lag.sum()
    return {
        "t": [round((t - t0) / 1000, 1) for t in per_sample.index],
        "records": [int(v) for v in per_sample.to_numpy()],
    }


def _per_bin(times: np.ndarray, t0: int, bin_s: int) -> dict:
    if not len(times):
        return {}
    bins = np.floor_divide(times - t0, bin_s * 1000)  # before the workload's start: negative bins
    values, counts = np.unique(bins, return_counts=True)
    return {int(v * bin_s): int(c) for v, c in zip(values, counts)}


def _drained_to_zero(lag: dict, drained_s: float | None) -> dict:
    """A run that drained ends with no lag: the last sample may predate the final commit."""
    if drained_s is None or not lag["t"] or (lag["t"][-1] >= drained_s and lag["records"][-1] == 0):
        return lag
    return {"t": lag["t"] + [max(drained_s, lag["t"][-1])], "records": lag["records"] + [0]}


def timeline(
    evidence: Evidence,
    lost_rids: np.ndarray,
    duplicated_rids: np.ndarray,
    extra_copy_ms: np.ndarray,
    t0: int,
    last_sent: int | None,
) -> dict:
    """`extra_copy_ms`: when each extra copy was made (harness/checker/copies.py); `t0`: time zero (run_start_ms);
    `last_sent`: when the last record was sent (sent_span_ms)."""
    end = max([e["ts_ms"] for e in evidence.history[-1:]] + [t0])
    bin_s = _bin_s((end - t0) / 1000)
    samples = offset_samples(evidence.history)
    sent = evidence.sent
    lost = sent[isin(sent.rid, lost_rids)]
    duplicated = sent[isin(sent.rid, duplicated_rids)]
    marks = _marks(evidence, t0, end, last_sent)
    failed = {e.get("streamlet") for e in evidence.history if e["event"] == QUERY_FAILED}
    return {
        "start_ms": t0,
        "duration_s": round((end - t0) / 1000, 1),
        "bin_s": bin_s,
        "marks": marks,
        "throughput": {
            s.name: _throughput(evidence.progress.get(s.name) or [], t0, bin_s) for s in evidence.streamlets
        },
        "lag": {
            s.name: _drained_to_zero(
                _lag(evidence.progress.get(s.name) or [], s.inputs, samples, t0),
                None if s.name in failed else marks["drained"],
            )
            for s in evidence.streamlets
        },
        "lost_over_time": _per_bin(lost.event_time_ms.to_numpy(np.int64), t0, bin_s),
        "extra_copies_over_time": _per_bin(np.asarray(extra_copy_ms, dtype=np.int64), t0, bin_s),
        "lost_per_partition": {int(k): int(v) for k, v in lost.partition.value_counts().sort_index().items()},
        "duplicated_per_partition": {
            int(k): int(v) for k, v in duplicated.partition.value_counts().sort_index().items()
        },
    }


def _timeline(context: Context) -> dict:
    made_ms = context[ACCOUNTING].made.time_ms.to_numpy()
    t0, last_sent = run_start_ms(context), sent_span_ms(context)[1]
    return {TIMELINE: timeline(context.evidence, context[LOST], context[DUPLICATED], made_ms, t0, last_sent)}


STEP = Step("timeline", _timeline, writes=(TIMELINE,), needs=(ACCOUNTING, TALLIES), uses=(LOST, DUPLICATED))
