"""A user's own streamlets: named package.module:Class, checked before anything starts, run like the built-ins.

The user's package lives in a temporary folder beside the scenario (not importable from the repository), as it
would in a user's own project.
"""

from __future__ import annotations

import json
import sqlite3
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from harness.scenario.parse import load_scenario
from tests.conftest import run_harness
from tests.evidence_helpers import acked

REVERSE = textwrap.dedent('''
    """A user's processor: reverses each payload in a Python UDF (so Spark's Python workers import this module)."""
    from pyspark.sql import functions as F

    from pipelines.api import SEQ_RECORD, Inlet, Outlet, Setting, Shape, Streamlet


    def _reverse(text):
        return text[::-1] if text is not None else None


    class Reverse(Streamlet):
        shape = Shape(inlets=(Inlet("in", SEQ_RECORD),), outlets=(Outlet("out", SEQ_RECORD),))
        settings = {"suffix": Setting("", "appended to every reversed payload"),
                    "drop_every": Setting(0, "records whose seq is a multiple of this are dropped, declared"),
                    "lose_every": Setting(0, "records whose seq is a multiple of this are dropped, undeclared")}

        def build(self, ctx):
            reverse = F.udf(_reverse, "string")
            records = ctx.read(self.shape.inlets[0]).withColumn(
                "payload", F.concat(reverse("payload"), F.lit(ctx.setting("suffix"))))
            if ctx.setting("drop_every"):
                records = ctx.drop_where(records, F.col("seq") % ctx.setting("drop_every") == 0, "test records")
            if ctx.setting("lose_every"):
                records = records.where(F.col("seq") % ctx.setting("lose_every") != 0)
            return [ctx.write(self.shape.outlets[0], records)]
''')

SINK = textwrap.dedent('''
    """A user's egress: appends every record to a table of its own SQLite file (not idempotent)."""
    import sqlite3

    from pipelines.api import SEQ_RECORD, Inlet, Shape, Streamlet


    class Sink(Streamlet):
        shape = Shape(inlets=(Inlet("in", SEQ_RECORD),))
        egress_evidence = "exported"

        def build(self, ctx):
            path = ctx.workdir / "sink.sqlite"
            with sqlite3.connect(path) as db:
                db.execute("CREATE TABLE IF NOT EXISTS sunk (key TEXT, seq INTEGER, payload TEXT)")

            def write(batch, batch_id):
                ctx.audit(batch, batch_id)
                rows = batch.select("key", "seq", "payload").toArrow()
                with sqlite3.connect(path) as db:
                    db.executemany("INSERT INTO sunk VALUES (?, ?, ?)", zip(*(c.to_pylist() for c in rows.columns)))

            return [ctx.foreach_batch(ctx.read(self.shape.inlets[0]), write, "main")]

        def export_state(self, ctx):
            with sqlite3.connect(ctx.workdir / "sink.sqlite") as db:
                for key, seq in db.execute("SELECT key, seq FROM sunk"):
                    yield {"key": key, "seq": seq}
''')


def scenario(
    kind: str = "shop.reverse:Reverse",
    settings: str = "{suffix: '!'}",
    extra: str = "",
    egress: str = "{kind: egress, settings: {mode: upsert}}",
) -> str:
    return (
        textwrap.dedent(f"""
        name: user-processor
        blueprint:
          streamlets:
            ingress: {{kind: ingress}}
            reverse: {{kind: "{kind}", settings: {settings}}}
            egress: {egress}
          connections:
            ingress.out: [reverse.in]
            reverse.out: [egress.in]
          topics:
            reverse.out: {{name: reversed}}
        workload: {{rate: 40, duration_s: 12, after_faults_s: 6, keys: 4, payload_bytes: 12}}
    """)
        + extra
    )


@pytest.fixture
def project(tmp_path):
    """A user's project: the package `shop` and the scenario beside it, and a package of theirs named like the
    harness's own `pipelines`, which must never be imported (the harness's comes first, in every process)."""
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "__init__.py").write_text("")
    (tmp_path / "shop" / "reverse.py").write_text(REVERSE)
    (tmp_path / "shop" / "sink.py").write_text(SINK)
    (tmp_path / "pipelines").mkdir()
    (tmp_path / "pipelines" / "__init__.py").write_text("raise ImportError('the user's own pipelines was imported')\n")
    (tmp_path / "pipelines" / "mine.py").write_text("")
    return tmp_path


BROKEN = [
    (
        "no such module",
        {"kind": "shop.nothing:Reverse"},
        "blueprint.streamlets.reverse.kind: cannot import 'shop.nothing': no such module on the import paths",
    ),
    (
        "the harness's package name",
        {"kind": "pipelines.mine:Reverse"},
        "blueprint.streamlets.reverse.kind: cannot import 'pipelines.mine': pipelines is the harness's own package, "
        "which comes before yours; a package of yours by that name is never imported: rename it",
    ),
    (
        "no such class",
        {"kind": "shop.reverse:Reversed"},
        "blueprint.streamlets.reverse.kind: module 'shop.reverse' has no attribute 'Reversed'",
    ),
    (
        "not a streamlet",
        {"kind": "shop.reverse:_reverse"},
        "blueprint.streamlets.reverse.kind: shop.reverse:_reverse is not a streamlet class (subclass "
        "pipelines.api.Streamlet)",
    ),
    (
        "unknown setting",
        {"settings": "{colour: red}"},
        "blueprint.streamlets.reverse.settings.colour: unknown setting for shop.reverse:Reverse (known: suffix, "
        "drop_every, lose_every)",
    ),
    ("bad setting", {"settings": "{suffix: 3}"}, "blueprint.streamlets.reverse.settings.suffix: expected text, got 3"),
    (
        "import fails",
        {"kind": "shop.broken:Reverse"},
        "blueprint.streamlets.reverse.kind: cannot import 'shop.broken': ZeroDivisionError: division by zero",
    ),
    (
        "syntax error",
        {"kind": "shop.typo:Reverse"},
        "blueprint.streamlets.reverse.kind: cannot import 'shop.typo': SyntaxError (line 1):",
    ),
    (
        "wrong shape",
        {"kind": "shop.shapeless:Reverse"},
        "blueprint.streamlets.reverse.kind: shop.shapeless:Reverse: shape.outlets must be a tuple of Outlet",
    ),
    (
        "no build",
        {"kind": "shop.shapeless:Lazy"},
        "blueprint.streamlets.reverse.kind: shop.shapeless:Lazy: has no build(self, ctx) method",
    ),
    (
        "no export",
        {"kind": "shop.shapeless:Unexported"},
        "blueprint.streamlets.reverse.kind: shop.shapeless:Unexported: egress_evidence is 'exported' but it has no "
        "export_state(self, ctx) method",
    ),
]


@pytest.mark.parametrize("case,change,message", BROKEN, ids=[b[0] for b in BROKEN])
def test_a_broken_user_streamlet_is_one_line_and_exit_2_before_anything_starts(project, case, change, message):
    (project / "shop" / "broken.py").write_text("1 / 0\n")
    (project / "shop" / "typo.py").write_text("def (:\n")
    (project / "shop" / "shapeless.py").write_text(
        textwrap.dedent("""
        from pipelines.api import SEQ_RECORD, Inlet, Shape, Streamlet

        class Reverse(Streamlet):
            shape = Shape(inlets=(Inlet("in", SEQ_RECORD),), outlets=("out",))

            def build(self, ctx):
                return []

        class Lazy(Streamlet):
            shape = Shape(inlets=(Inlet("in", SEQ_RECORD),), outlets=())
            egress_evidence = "records"

        class Unexported(Streamlet):
            shape = Shape(inlets=(Inlet("in", SEQ_RECORD),), outlets=())
            egress_evidence = "exported"

            def build(self, ctx):
                return []
    """)
    )
    path = project / "scenario.yaml"
    path.write_text(scenario(**change))
    result = run_harness("run", str(path), "--out", str(project / "run"))
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"harness: error: {path}: {message}"), lines
    assert not (project / "run").exists()


def test_imports_name_the_folders_user_streamlets_come_from(project):
    (project / "scenarios").mkdir()
    path = project / "scenarios" / "scenario.yaml"
    path.write_text(scenario())  # the scenario's own folder has no `shop`
    result = run_harness("run", str(path), "--out", str(project / "run"))
    assert result.returncode == 2 and "cannot import 'shop.reverse'" in result.stderr
    path.write_text(scenario(extra="imports: [nowhere]\n"))
    result = run_harness("run", str(path), "--out", str(project / "run"))
    assert (
        result.returncode == 2 and f"imports[0]: no such folder: {project / 'scenarios' / 'nowhere'}" in result.stderr
    )


@pytest.mark.e2e
def test_a_user_processor_and_egress_under_after_write_kills_are_judged_as_their_own_files_say(project):
    """One run of a user's processor (reverses payloads in a UDF, drops every 5th seq declared and every 7th
    undeclared) and a user's egress (appends to its own SQLite file, audits through the context, exports its
    state), each killed after a write. Every claim is checked against counts made here from the files."""
    path = project / "scenarios" / "reverse.yaml"
    path.parent.mkdir()
    path.write_text(
        scenario(
            settings="{suffix: '!', drop_every: 5, lose_every: 7}",
            egress="{kind: 'shop.sink:Sink'}",
            extra=textwrap.dedent("""
        imports: [..]
        faults:
          - {kind: kill-driver, target: reverse, start_s: 6, at: after-write, restart_after_s: 1}
          - {kind: kill-driver, target: egress, start_s: 9, at: after-write, restart_after_s: 1}
    """),
        )
    )
    run_dir = project / "run"
    result = run_harness("run", str(path), "--out", str(run_dir), timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]

    # Independent of the checker: the user's code ran (payloads reversed, suffixed), and the sink's own store holds
    # every acked record but the dropped ones; the replays after the kills stored some twice (it only appends).
    sent = acked(run_dir)
    undeclared = {(k, s) for k, s in sent if s % 7 == 0}  # the plain where() comes last: it removes marked records too
    declared = {(k, s) for k, s in sent if s % 5 == 0} - undeclared
    with sqlite3.connect(run_dir / "work" / "egress" / "sink.sqlite") as db:
        stored = Counter((k, s) for k, s, _ in db.execute("SELECT key, seq, payload FROM sunk"))
        assert all(p.endswith("!") and len(p) == 13 for (p,) in db.execute("SELECT payload FROM sunk"))
    assert set(stored) == sent - declared - undeclared
    twice_in_store = {r for r, n in stored.items() if n > 1}
    assert twice_in_store
    recorded = {(e["key"], e["seq"]) for e in map(json.loads, (run_dir / "dropped" / "reverse.jsonl").open())}
    assert recorded == declared

    # The processor's held batch was written to the topic before the kill and again by the replay.
    events = [json.loads(line) for line in (run_dir / "history.jsonl").open()]
    held = next(e["held_batch"] for e in events if e["event"] == "fault_begun" and e["target"] == "reverse")
    copies, held_records = Counter(), set()
    with open(run_dir / "topics" / "reversed.jsonl") as fh:
        for line in fh:
            value = json.loads(line)["value"]
            copies[(value["key"], value["seq"])] += 1
            if value["batches"]["reverse"] == held:
                held_records.add((value["key"], value["seq"]))
    twice_in_topic = {r for r, n in copies.items() if n > 1}
    assert held_records and twice_in_topic == held_records

    report = json.loads((run_dir / "report.json").read_text())
    hops = {h["name"]: h for h in report["hops"]}
    assert hops["reversed"]["counts"]["duplicated_deliveries"] == len(twice_in_topic)
    # Declared drops are dropped, not lost; undeclared ones are lost, from the processor's topic on.
    assert report["counts"]["dropped"] == len(declared) and report["counts"]["lost"] == len(undeclared)
    for hop in ("reversed", "egress"):
        assert (hops[hop]["counts"]["dropped"], hops[hop]["counts"]["lost"]) == (len(declared), len(undeclared))
    assert hops["ingress-out"]["counts"]["dropped"] == 0 and hops["ingress-out"]["verdict"] == "exactly-once"
    assert report["causes"]["lost"]["unexplained"] == len(undeclared)
    # The sink's state, as exported, is what its store holds.
    assert report["counts"]["duplicated_in_state"] == len(twice_in_store) and report["verdict"]["end_to_end"] == "none"
    pipeline = json.loads((run_dir / "pipeline.json").read_text())
    assert [(s["name"], s["kind"], s["role"], s["egress_evidence"]) for s in pipeline["streamlets"]] == [
        ("ingress", "ingress", "ingress", None),
        ("reverse", "shop.reverse:Reverse", "processor", None),
        ("egress", "shop.sink:Sink", "egress", "exported"),
    ]


def test_the_shipped_example_pipeline_is_valid_as_the_readme_runs_it():
    """examples/orders is checked like any user's pipeline (imported from its own folder) before anything starts."""
    scenario = load_scenario(Path(__file__).resolve().parent.parent / "examples" / "orders" / "orders.yaml")
    roles = {name: (s.kind, s.role, s.cls.egress_evidence) for name, s in scenario.blueprint.streamlets.items()}
    assert roles == {
        "validate": ("orders.validate:ValidateOrders", "ingress", None),
        "enrich": ("orders.enrich:EnrichOrders", "processor", None),
        "sink": ("orders.sink:OrdersSink", "egress", "exported"),
    }
