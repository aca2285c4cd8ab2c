"""Scenario bytes -> a plain YAML tree, safely: any file content gives a tree or one ScenarioError line.

Guards, each with the limit in its message: the file's size, UTF-8 text,
YAML syntax, nesting depth, and the size of the tree once anchors and
aliases are expanded (a "billion laughs" file is a few lines that expand to
billions of values; the run directory saves the scenario expanded as JSON).
Mapping keys must be text, so every later error can name its field path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from harness.errors import HarnessError

MAX_BYTES = 1 << 20  # a scenario is a page of YAML; a megabyte is far beyond any real one
MAX_DEPTH = 32
MAX_VALUES = 100_000  # values in the tree with every alias expanded


class ScenarioError(HarnessError):
    pass


def _check_tree(node: yaml.Node, path: Path) -> None:
    """Depth and expanded size of a composed YAML graph, without expanding it (sizes memoized per node)."""
    sizes: dict[int, int] = {}

    def size(n: yaml.Node, depth: int) -> int:
        if depth > MAX_DEPTH:
            raise ScenarioError(f"{path}: nested more than {MAX_DEPTH} levels deep (line {n.start_mark.line + 1})")
        if id(n) in sizes:
            return sizes[id(n)]
        if isinstance(n, yaml.MappingNode):
            total = 1
            for key, value in n.value:
                if not isinstance(key, yaml.ScalarNode) or key.tag != "tag:yaml.org,2002:str":
                    raise ScenarioError(
                        f"{path}: line {key.start_mark.line + 1}: a field name must be text, "
                        f"got {key.value if isinstance(key, yaml.ScalarNode) else 'a ' + key.id}"
                    )
                total += size(value, depth + 1)
        elif isinstance(n, yaml.SequenceNode):
            total = 1 + sum(size(item, depth + 1) for item in n.value)
        else:
            total = 1
        if total > MAX_VALUES:
            raise ScenarioError(f"{path}: expands to more than {MAX_VALUES:,} values (anchors and aliases included)")
        sizes[id(n)] = total
        return total

    size(node, 0)


def read_tree(path: Path) -> Any:
    """The file's YAML as plain Python values (dicts with text keys, lists, scalars)."""
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise ScenarioError(f"{path}: no such scenario file") from None
    except IsADirectoryError:
        raise ScenarioError(f"{path}: is a folder, not a scenario file") from None
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read ({exc.strerror})") from None
    if len(data) > MAX_BYTES:
        raise ScenarioError(f"{path}: larger than {MAX_BYTES // 1024} KiB: not a scenario file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"{path}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})") from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        if node is None:
            raise ScenarioError(f"{path}: the file is empty")
        _check_tree(node, path)
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ScenarioError(f"{path}: not valid YAML{where}: {problem}") from None
    except RecursionError:
        raise ScenarioError(f"{path}: nested too deeply to read") from None
