"""The data flows one way: no import cycles between packages, and the checker reads only the run directory."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("harness", "pipelines", "contract")


def _package_of(module: str) -> str | None:
    """The harness's parts are its subpackages and its top-level modules (harness.checker.check ->
    harness.checker, harness.files -> harness.files); the streamlets are one package (pipelines)."""
    parts = module.split(".")
    if parts[0] not in PACKAGES:
        return None
    return ".".join(parts[:2]) if parts[0] == "harness" else parts[0]


def _imports(path: Path) -> set[str]:
    """Every module a file imports (at any level: a function's lazy import counts too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return found


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            source = _package_of(module)
            targets = {_package_of(m) for m in _imports(path)} - {None, source}
            graph.setdefault(source, set()).update(targets)
    return graph


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), list(graph.get(start, ()))
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo.extend(graph.get(node, ()))
    return seen


def test_no_import_cycles_between_packages():
    graph = _graph()
    assert {"harness.checker", "harness.runner", "harness.chaos", "pipelines"} <= set(graph)
    cycles = sorted(p for p in graph if p in _reachable(graph, p))
    assert not cycles, {p: sorted(graph[p]) for p in cycles}


def test_the_checker_and_the_reports_import_neither_the_streamlets_nor_the_scenario_parser():
    graph = _graph()
    for package in ("harness.checker", "harness.report"):
        reached = _reachable(graph, package)
        assert not reached & {"pipelines", "harness.scenario", "harness.runner", "harness.chaos"}, (
            package,
            sorted(reached),
        )


def test_the_streamlets_do_not_import_the_harness():
    assert not {p for p in _graph()["pipelines"] if p.startswith("harness")}


def test_no_function_of_the_harness_is_over_80_lines():
    """A function a reader takes in at once: longer ones are split into named parts."""
    long = []
    for path in (ROOT / "harness").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 80:
                long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}")
    assert not long, long


def test_no_class_of_the_harness_is_over_400_lines_or_built_of_mixins():
    """A class with one job: a run is composed of services (harness/runner/), not one class every part answers
    through; a class's base is a Protocol, a dataclass's parent or an error, never a mixin holding half its methods."""
    found = []
    for path in (ROOT / "harness").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ClassDef):
                continue
            bases = [ast.unparse(b) for b in node.bases]
            if node.end_lineno - node.lineno >= 400 or any("Mixin" in b for b in bases):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}({', '.join(bases)})")
    assert not found, found


def _fields(node: ast.ClassDef) -> int:
    return sum(isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) for n in node.body)


def test_no_dataclass_of_the_checker_has_over_15_fields():
    """What a check finds is an open map of typed keys (harness/checker/step.py), not a record every step adds a
    field to: the Context and the Report carry the keys found, and each finding is small."""
    found = []
    for path in (ROOT / "harness" / "checker").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            dataclass = isinstance(node, ast.ClassDef) and any(
                "dataclass" in ast.unparse(d) for d in node.decorator_list
            )
            if dataclass and _fields(node) > 15:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {_fields(node)} fields")
    assert not found, found


def test_the_contract_imports_neither_side():
    assert not _graph().get("contract", set()), (
        "contract/ is the ground floor: it imports nothing of harness or pipelines"
    )


def _vocabulary_uses(path: Path, words: set[str], distinct: set[str]) -> list[str]:
    """Where a module writes a word of the egress evidence itself: an egress_evidence set to or compared with a
    string, SQL naming a store table, or a word no other meaning shares ("exported", "window_audit") as a string
    (docstrings left out: they may name a word; "records" is English too, so only its uses above count)."""
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    sql = re.compile(r"\b(?:FROM|INTO|TABLE|UPDATE)\s+(%s)\b" % "|".join(map(re.escape, words)), re.IGNORECASE)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Compare, ast.Assign, ast.AnnAssign)):
            names = {n.attr if isinstance(n, ast.Attribute) else getattr(n, "id", None) for n in ast.walk(node)}
            strings = [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
            if "egress_evidence" in names and set(strings) & words:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} egress_evidence and {strings}")
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            if node.value in distinct or sql.search(node.value):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.value[:60]!r}")
    return found


def test_each_word_of_the_egress_evidence_is_written_in_one_place():
    """The egress evidence kinds and the store's table names are defined in contract/egress.py alone: the
    streamlets write and the checker reads them through it."""
    from contract import egress

    words = set(egress.EVIDENCE_KINDS) | set(egress.TABLES)
    distinct = {egress.EXPORTED, egress.WINDOW_AUDIT, egress.COMMITTED_BATCHES}
    elsewhere = [
        use
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if path != ROOT / "contract" / "egress.py"
        for use in _vocabulary_uses(path, words, distinct)
    ]
    assert not elsewhere


def test_every_fault_target_has_its_meaning_in_one_rule():
    from harness.faults.kind import TARGETS
    from harness.scenario.targets import RULES

    assert set(RULES) == set(TARGETS)


# A kind is one module of its folder, found by discovery (contract/plugins.py builtin_kinds), as docs/architecture.md's
# table "What each takes" says: (its folder, the package scanned, the class its KIND is).
KINDS = (
    ("harness/faults/kinds", "harness.faults.kinds", "harness.faults.kind:FaultKind"),
    ("harness/outputs/kinds", "harness.outputs.kinds", "harness.outputs.kind:OutputKind"),
    ("harness/checker/checks", "harness.checker.checks", "harness.checker.step:Step"),
    (
        "harness/checker/expectations/kinds",
        "harness.checker.expectations.kinds",
        "harness.checker.expectations.kind:ExpectationKind",
    ),
)


def test_each_kind_is_one_module_of_its_folder_as_the_architecture_table_says():
    import importlib
    import pkgutil

    from contract.plugins import builtin_kinds, import_named

    table = (ROOT / "docs" / "architecture.md").read_text().split("What each takes, in files:")[1].split("\n\n")[1]
    for folder, package, cls in KINDS:
        assert f"| `{folder}/<" in table, folder
        found = builtin_kinds(package, import_named(cls, "class"))
        modules = [m.name for m in pkgutil.iter_modules(importlib.import_module(package).__path__)]
        assert len(found) == len(modules) > 0, (folder, sorted(found), modules)  # every module one kind, none two


def _event_literals(path: Path) -> list[str]:
    """Where a module writes or compares an event name as a literal: a `record("...")`, an `e["event"] == "..."` (or
    `.get("event")`, `in (...)`), an `{"event": "..."}`."""

    def literals(node: ast.AST) -> list[ast.Constant]:
        items = node.elts if isinstance(node, (ast.Tuple, ast.Set, ast.List)) else [node]
        return [i for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)]

    def names_event(node: ast.AST) -> bool:
        key = node.slice if isinstance(node, ast.Subscript) else None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            key = node.args[0] if node.args else None
        return isinstance(key, ast.Constant) and key.value == "event"

    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "record":
            found += literals(node.args[0]) if node.args else []
        elif isinstance(node, ast.Compare) and any(map(names_event, [node.left, *node.comparators])):
            found += [c for side in [node.left, *node.comparators] for c in literals(side)]
        elif isinstance(node, ast.Dict):
            found += [
                c
                for k, v in zip(node.keys, node.values)
                if isinstance(k, ast.Constant) and k.value == "event"
                for c in literals(v)
            ]
    return [f"{path.relative_to(ROOT)}:{c.lineno} {c.value!r}" for c in found]


def test_no_module_writes_or_compares_an_event_name_as_a_literal():
    """The history's events are harness/evidence/history.py's names, the progress files' contract/query_events.py's:
    a typo is an import error, not a silent gap in the evidence."""
    modules = [p for package in ("harness", "pipelines") for p in sorted((ROOT / package).rglob("*.py"))]
    assert [hit for path in modules for hit in _event_literals(path)] == []


def test_the_command_line_is_thin():
    """A command module declares its commands and prints; the work is done in the rooms it calls."""
    sizes = {p.name: len(p.read_text().splitlines()) for p in (ROOT / "harness" / "cli").glob("*.py")}
    assert {name: n for name, n in sizes.items() if n > 300} == {}
