"""The run's producers.csv for a check (harness/evidence/producers.py), a gap naming what goes untold where it is
unreadable, or missing when the check needs it."""

from __future__ import annotations

import pandas as pd

from harness.checker.step import Context
from harness.evidence.layout import RunLayout
from harness.evidence.producers import read_producers


def run_producers(context: Context, untold: str, needed: bool = True) -> pd.DataFrame | None:
    """producers.csv (None where the run has none or it cannot be read: `untold`, in a gap, says what the check
    cannot tell; a run without one gets that gap only where the check `needed` it)."""
    try:
        producers = read_producers(RunLayout(context.evidence.root).producers)
    except (OSError, ValueError) as exc:
        context.gaps.append(f"producers.csv: unreadable ({str(exc).splitlines()[0]}); {untold}")
        return None
    if producers is None and needed:
        context.gaps.append(f"producers.csv: missing (a cluster the harness did not start); {untold}")
    return producers
