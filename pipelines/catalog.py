"""The streamlet kinds a blueprint can name: shape and settings, without importing Spark."""

from __future__ import annotations

import importlib

from pipelines.model import SEQ_RECORD, WINDOW_COUNT, Inlet, Outlet, Shape, StreamletSpec

EGRESS_MODES = ("append", "upsert", "dedup", "transactional")
EGRESS_KINDS = ("egress", "window-egress")  # the kinds that write to a store

SPECS: dict[str, StreamletSpec] = {
    spec.kind: spec
    for spec in (
        StreamletSpec(
            "ingress",
            Shape(outlets=(Outlet("out", SEQ_RECORD),)),
            settings={},
            source_topic=True,
            description="reads the workload's source topic, validates records, partitions by key",
        ),
        StreamletSpec(
            "processor",
            Shape(inlets=(Inlet("in", SEQ_RECORD),), outlets=(Outlet("out", SEQ_RECORD),)),
            settings={"crash_probability": 0.0},
            description="stateless transform; may crash its executor task with a given probability",
        ),
        StreamletSpec(
            "windowed-count",
            Shape(inlets=(Inlet("in", SEQ_RECORD),), outlets=(Outlet("out", WINDOW_COUNT),)),
            settings={"window": "10 seconds", "watermark": "5 seconds"},
            description="event-time windowed count per key behind a watermark (stateful)",
        ),
        StreamletSpec(
            "egress",
            Shape(inlets=(Inlet("in", SEQ_RECORD),)),
            settings={"mode": "upsert", "store": "sqlite", "dedup_watermark": "1 hour"},
            description="writes records to a store (append, upsert, dedup or transactional) with an audit log",
        ),
        StreamletSpec(
            "window-egress",
            Shape(inlets=(Inlet("in", WINDOW_COUNT),)),
            settings={"store": "sqlite"},
            description="writes window counts to a store, upsert by (key, window), with an audit log",
        ),
    )
}

# kind -> "module:Class" implementing it (imported only inside a driver process)
IMPLEMENTATIONS = {
    "ingress": "pipelines.ingress:Ingress",
    "processor": "pipelines.processor:Processor",
    "windowed-count": "pipelines.windowed_count:WindowedCount",
    "egress": "pipelines.egress:Egress",
    "window-egress": "pipelines.egress:WindowEgress",
}


def implementation(kind: str):
    module, cls = IMPLEMENTATIONS[kind].split(":")
    return getattr(importlib.import_module(module), cls)
