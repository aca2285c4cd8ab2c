"""Spark's interval strings ('10 seconds', '1 minute'): a window's size and slide, a watermark's delay."""

from __future__ import annotations

import re

_UNITS_MS = {"millisecond": 1, "second": 1000, "minute": 60_000, "hour": 3_600_000, "day": 86_400_000}


def interval_ms(text: str) -> int:
    """'10 seconds', '1 minute', '500 milliseconds' -> milliseconds."""
    match = re.fullmatch(r"\s*(\d+)\s*(millisecond|second|minute|hour|day)s?\s*", text)
    if not match:
        raise ValueError(f"not an interval: {text!r} (expected e.g. '10 seconds')")
    return int(match.group(1)) * _UNITS_MS[match.group(2)]
