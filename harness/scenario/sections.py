"""A section of a scenario file declared once: its fields, each with its type, default, bounds or choices and what
it means. The parser reads a section through its declaration (the keys it allows, the defaults, the one-line errors
naming the field), and docs/scenarios.md is checked against the declarations (tests/test_scenario_sections.py)."""

from __future__ import annotations

import copy
import typing
from dataclasses import dataclass, fields, replace
from typing import Any

from harness.field import Field
from harness.scenario.fields import Fields


@dataclass(frozen=True)
class Section:
    path: str  # as errors name it: workload, workload.topic, source_options.NAME
    fields: tuple[Field, ...]

    @property
    def names(self) -> set[str]:
        return {f.name for f in self.fields}

    @staticmethod
    def declared_by(path: str, cls: type) -> Section:
        """A section whose fields are a dataclass's, declared where they are used (pipelines/settings.py
        SourceOptions): each field's type, default and metadata (help, choices, minimum, maximum)."""
        hints = typing.get_type_hints(cls)
        return Section(path, tuple(Field(f.name, _types(hints[f.name]), f.default, **f.metadata) for f in fields(cls)))

    def table(self) -> str:
        """The section as docs/scenarios.md lists it: a field per row, its type, its default and what it means."""
        rows = [f"`{self.path}` | type | default | what", "---|---|---|---"]
        return "\n".join(rows + [_row(spec) for spec in self.fields])

    def read(self, raw: Any, path: str | None = None) -> dict[str, Any]:
        """Every field's value (its default where absent), each checked; one unknown key or bad value is one
        BlueprintError naming it (`path`: this section's, for one of several: source_options.NAME)."""
        f = Fields({} if raw is None else raw, path or self.path, self.names)
        values = {}
        for spec in (
            replace(spec, default=copy.deepcopy(spec.default)) for spec in self.fields
        ):  # a default of its own
            if spec.size:
                values[spec.name] = f.size(spec.name, int(spec.minimum or 1))
            elif spec.choices is not None:
                values[spec.name] = f.choice(spec.name, spec.choices, spec.default)
            elif spec.types == (int, float):
                values[spec.name] = f.number(spec.name, spec.default, spec.minimum, spec.maximum, spec.required)
            else:
                values[spec.name] = f.get(
                    spec.name, spec.types, spec.default, spec.minimum, spec.maximum, required=spec.required
                )
        return values


def _types(hint) -> type | tuple[type, ...]:
    """A field's types from its annotation (`int | None` -> int: None is its absence)."""
    found = tuple(t for t in typing.get_args(hint) if t is not type(None)) or (hint,)
    return found[0] if len(found) == 1 else found


def _row(spec: Field) -> str:
    types = spec.types if isinstance(spec.types, tuple) else (spec.types,)
    kind = "size" if spec.size else "number" if types == (int, float) else " or ".join(t.__name__ for t in types)
    if spec.choices:
        kind = " \\| ".join(spec.choices)
    bounds = [f"{sign} {_number(v)}" for sign, v in ((">=", spec.minimum), ("<=", spec.maximum)) if v is not None]
    shown = f"{kind} ({', '.join(bounds)})" if bounds else kind
    default = "required" if spec.required else "" if spec.default is None else f"`{spec.default}`"
    return f"`{spec.name}` | {shown} | {default} | {spec.help}"


def _number(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


BEGIN, END = (
    "<!-- fields: generated from the declarations (harness/scenario/sections_doc.py) -->",
    "<!-- fields end -->",
)
