"""Typed access to one mapping of a scenario file, naming the field path in every error."""

from __future__ import annotations

import math
import re
from typing import Any

from harness.errors import HarnessError

SIZE_UNITS = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}
SIZE_UNITS.update({"KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40})


def parse_size(value: Any) -> int:
    """A size in bytes from a number of bytes or a text like 500MB, 2GB or 1.5GiB (KB, MB, GB, TB: powers of 1000;
    KiB, MiB, GiB, TiB: of 1024). Raises ValueError saying what it expected."""
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", str(value))
    unit = SIZE_UNITS.get(found[2].upper() or "B") if found else None
    if unit is None or float(found[1]) * unit < 1:
        raise ValueError(f"expected a size like 500MB, 2GB or 1.5GiB, got {value!r}")
    return int(float(found[1]) * unit)


class BlueprintError(HarnessError):
    """A broken scenario field; `path` is the field it is about (e.g. blueprint.connections)."""

    def __init__(self, path: str, message: str):
        super().__init__(f"{path}: {message}")
        self.path = path


class Fields:
    """One mapping of the file: unknown keys are errors, every value is type- and range-checked."""

    def __init__(self, raw: Any, path: str, allowed: set[str]):
        if not isinstance(raw, dict):
            raise BlueprintError(path, f"expected a mapping, got {type(raw).__name__}")
        unknown = sorted(str(k) for k in set(raw) - allowed)
        if unknown:
            raise BlueprintError(
                f"{path}.{unknown[0]}", f"unknown field (expected one of {', '.join(sorted(allowed))})"
            )
        self.raw, self.path = raw, path

    def get(self, key: str, kind, default=None, minimum=None, maximum=None, required=False):
        if key not in self.raw:
            if required:
                raise BlueprintError(f"{self.path}.{key}", "required field is missing")
            return default
        value = self.raw[key]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if isinstance(value, bool) and bool not in kinds or not isinstance(value, kinds):
            names = " or ".join(k.__name__ for k in kinds)
            raise BlueprintError(f"{self.path}.{key}", f"expected {names}, got {value!r}")
        if isinstance(value, float) and not math.isfinite(value):
            raise BlueprintError(f"{self.path}.{key}", f"expected a finite number, got {value!r}")
        if minimum is not None and value < minimum or maximum is not None and value > maximum:
            bounds = f"from {minimum} to {maximum}" if maximum is not None else f"of at least {minimum}"
            raise BlueprintError(f"{self.path}.{key}", f"expected a value {bounds}, got {value!r}")
        return value

    def number(self, key: str, default=None, minimum=None, maximum=None, required=False) -> float | None:
        value = self.get(key, (int, float), default, minimum, maximum, required)
        return None if value is None else float(value)

    def size(self, key: str, minimum: int = 1) -> int | None:
        """A size in bytes (parse_size), at least `minimum`; None when the key is absent."""
        if key not in self.raw:
            return None
        try:
            value = parse_size(self.raw[key])
        except ValueError as exc:
            raise BlueprintError(f"{self.path}.{key}", str(exc)) from None
        if value < minimum:
            raise BlueprintError(f"{self.path}.{key}", f"expected at least {minimum:,} bytes, got {value:,}")
        return value

    def choice(self, key: str, choices: tuple[str, ...], default: str | None = None) -> str | None:
        value = self.get(key, str, default)
        if value is not None and value not in choices:
            raise BlueprintError(f"{self.path}.{key}", f"expected one of {', '.join(choices)}, got {value!r}")
        return value
