"""The order record every hop of this pipeline passes on (key, seq, event_time and batches are the
harness's evidence contract; the rest is the pipeline's own)."""

from pipelines.api import Field, Schema

ORDER = Schema(
    "Order",
    (
        Field("key", "string"),  # the customer
        Field("seq", "long"),  # the customer's order number
        Field("event_time", "timestamp"),
        Field("amount_cents", "long"),
        Field("region", "string"),
        Field("batches", "batch_map"),
    ),
)
