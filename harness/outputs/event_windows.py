"""An output's event-time window as a scenario gives it (a windowed count's `window`, an aggregate's
`aggregate.window`): its length, its slide (which divides it) and the record field it windows on, each checked."""

from __future__ import annotations

from harness.evidence.intervals import interval_ms
from harness.outputs.kind import OutputSpec


def interval(spec: OutputSpec, where: str, text: str) -> str:
    """A positive length of time ("10 seconds"), or a scenario error at `where`."""
    try:
        if interval_ms(text) <= 0:
            raise ValueError("not positive")
    except ValueError:
        raise spec.error(where, f"expected a length of time like '10 seconds', got {text!r}") from None
    return text


def window_spans(spec: OutputSpec, where: str, declared: dict) -> tuple[str, str, str | None]:
    """The window at `where` (its fields read): its `size`, its `slide` (by default its size: tumbling) and its
    `time` field (an event_time field of the record template, or None)."""
    size = interval(spec, f"{where}.size", declared["size"])
    slide = interval(spec, f"{where}.slide", declared["slide"] or size)
    if interval_ms(size) % interval_ms(slide):
        raise spec.error(f"{where}.slide", f"expected a length {size!r} is a multiple of, got {slide!r}")
    time_field = declared["time"]
    if time_field is not None:
        field_spec = (spec.record or {}).get("fields", {}).get(time_field)
        if not isinstance(field_spec, dict) or "event_time" not in field_spec:
            raise spec.error(f"{where}.time", f"{time_field!r} is not an event_time field of workload.record")
    return size, slide, time_field
