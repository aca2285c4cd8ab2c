"""The numpy engine: the run's evidence loaded whole, every hop reconciled and everything the other engines tally
counted in memory. Small enough to read: the reference the dense and Spark engines are tested against
(tests/test_summary_engines.py), and what judges evidence the dense engine cannot hold in its arrays."""

from __future__ import annotations

import pandas as pd

from harness.checker.arrivals import tally
from harness.checker.copies import sent_copies
from harness.checker.hops import reconcile_hops
from harness.checker.intermediate import FaultSpan, HopData, Tallies
from harness.checker.load import Evidence
from harness.checker.periods import planned_span_ms, sendings
from harness.checker.reconcile import Reconciliation
from harness.checker.windows import window_tally


def count_in_memory(
    evidence: Evidence, hops: list[HopData], spans: list[FaultSpan]
) -> tuple[list[Reconciliation], Tallies]:
    """Each hop's reconciliation and the tallies, from the evidence loaded (every record of it: each is notable,
    and the acknowledgement log's every record is logged)."""
    sent = evidence.sent
    rids = sent.rid.to_numpy()
    index = pd.Index(rids)
    tallies = Tallies(
        tally(evidence, hops, spans),
        sendings(sent, planned_span_ms(evidence.resolved)),
        [sent_copies(hop, index) for hop in hops],
        rids,
        rids,
        window_tally(evidence),
    )
    return reconcile_hops(evidence, hops), tallies
