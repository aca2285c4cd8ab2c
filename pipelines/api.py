"""The streamlet API: everything a user's streamlet imports.

    from pipelines.api import SEQ_RECORD, Inlet, Outlet, Setting, Shape, Streamlet

    class Redact(Streamlet):
        shape = Shape(inlets=(Inlet("in", SEQ_RECORD),), outlets=(Outlet("out", SEQ_RECORD),))
        settings = {"mask": Setting("***", "what replaces the payload")}

        def build(self, ctx):
            records = ctx.read(self.shape.inlets[0]).withColumn("payload", F.lit(ctx.setting("mask")))
            return [ctx.write(self.shape.outlets[0], records)]

A blueprint names it `kind: mypackage.redact:Redact`. docs/streamlets.md has the whole contract: what a record
carries from hop to hop, what the context does for the author, and how the harness checks a class before a run.
"""

from pipelines.context import StreamletContext
from pipelines.model import (
    SEQ_RECORD,
    SOURCE_RECORD,
    WINDOW_COUNT,
    Field,
    Inlet,
    Outlet,
    Schema,
    Setting,
    Shape,
    Streamlet,
)

__all__ = [
    "SEQ_RECORD",
    "SOURCE_RECORD",
    "WINDOW_COUNT",
    "Field",
    "Inlet",
    "Outlet",
    "Schema",
    "Setting",
    "Shape",
    "Streamlet",
    "StreamletContext",
]
