"""docs/scenarios.md's field tables, written from the sections' declarations (SECTIONS below):

    .venv/bin/python -m harness.scenario.sections_doc docs/scenarios.md

rewrites what stands between its markers; tests/test_scenario_sections.py fails while the page and the declarations
differ."""

from __future__ import annotations

import sys
from pathlib import Path

from harness.outputs import builtin_output_kinds
from harness.outputs.aggregate import AGGREGATE
from harness.outputs.aggregate import WINDOW as AGGREGATE_WINDOW
from harness.outputs.files import WINDOW
from harness.scenario import declared
from harness.scenario.brokers import KAFKA_BROKERS
from harness.scenario.explore_spec import EXPLORE
from harness.scenario.fault_rules import FAULT
from harness.scenario.kafka import KAFKA, TRUSTSTORE
from harness.scenario.sections import BEGIN, END, Section
from harness.scenario.storm_spec import STORM
from harness.scenario.world import WORLD

# Every declared section, in the order docs/scenarios.md lists them.
SECTIONS = (
    declared.SCENARIO,
    declared.BLUEPRINT,
    declared.STREAMLET,
    declared.WORKLOAD,
    declared.TOPIC,
    declared.SOURCE,
    declared.PARTNER,
    declared.TRANSACTIONS,
    declared.SOURCE_OPTIONS,
    declared.APPLICATION_FIELDS,
    declared.DEDUPLICATES,
    declared.SCHEDULE,
    WORLD,
    declared.CLUSTER,
    declared.SPARK,
    declared.DOCKER,
    KAFKA_BROKERS,
    FAULT,
    STORM,
    EXPLORE,
    KAFKA,
    TRUSTSTORE,
    declared.EVIDENCE,
    declared.PREFLIGHT,
)


def output_sections() -> tuple[Section, ...]:
    """The built-in output kinds' fields: one section per set of fields, naming the kinds that take it."""
    grouped: dict[tuple, list[str]] = {}
    for kind in builtin_output_kinds().values():
        grouped.setdefault(kind.fields, []).append(kind.name)
    kinds = tuple(Section(f"outputs.NAME ({', '.join(names)})", fields) for fields, names in grouped.items())
    return (
        *kinds,
        Section("outputs.NAME.window", WINDOW),
        Section("outputs.NAME.aggregate", AGGREGATE),
        Section("outputs.NAME.aggregate.window", AGGREGATE_WINDOW),
    )


def tables() -> str:
    return "\n\n".join(section.table() for section in (*SECTIONS, *output_sections()))


def rewritten(text: str) -> str:
    if BEGIN not in text or END not in text:
        raise SystemExit(f"the page has no {BEGIN} ... {END} to write the tables between")
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return f"{head}{BEGIN}\n\n{tables()}\n\n{END}{tail}"


if __name__ == "__main__":
    page = Path(sys.argv[1])
    page.write_text(rewritten(page.read_text()))
