"""One field of a scenario's section, declared once: its type, default, bounds or choices and what it means. The
scenario reads a section through its fields (harness/scenario/sections.py), and the kinds that declare fields of
their own (an output kind's, harness/outputs/kind.py) declare them so."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Field:
    """One field: `types` (bool is never an int; a number, `(int, float)`, is read as a float), its `default` (None:
    absent unless given), `minimum` and `maximum`, or `choices`. A mapping or a list is read as given, for the
    section's parser to look into."""

    name: str
    types: type | tuple[type, ...]
    default: Any = None
    help: str = ""
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] | None = None
    size: bool = False  # a size in bytes (500MB, 2GB, 1.5GiB, or a number of bytes) of at least `minimum`
    required: bool = False
