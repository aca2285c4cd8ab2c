"""Where a streamlet driver keeps its state and writes its evidence: its DriverPaths in a run directory's layout
(a run's drivers, and the CDS training's streamlets)."""

from __future__ import annotations

from harness.evidence.layout import RunLayout
from pipelines.settings import DriverPaths


def driver_paths(layout: RunLayout, streamlet: str, columnar: bool = False) -> DriverPaths:
    """`columnar`: an egress writes its deliveries, and exports its state, as segments (harness/evidence/topics.py's
    form of the run)."""
    return DriverPaths(
        checkpoints=str(layout.checkpoints(streamlet)),
        progress=str(layout.progress(streamlet)),
        spark_local=str(layout.spark_local(streamlet)),
        crash_arm=str(layout.crash_arm(streamlet)),
        crash_held=str(layout.crash_held(streamlet)),
        crash_offered=str(layout.crash_offered(streamlet)),
        egress_db=str(layout.egress_db(streamlet)),
        dropped=str(layout.dropped(streamlet)),
        workdir=str(layout.workdir(streamlet)),
        egress_state=str(layout.egress_state(streamlet)),
        store_namespace=f"{layout.root.name}_{streamlet}",
        egress_audit=str(layout.egress_audit(streamlet)) if columnar else "",
        egress_records=str(layout.egress_records(streamlet)) if columnar else "",
    )
