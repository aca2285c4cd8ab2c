"""The entry point of every streamlet driver process.

    python -m pipelines.driver SETTINGS.json

Loads the settings the harness wrote, starts a SparkSession with the Kafka
connector, attaches the progress listener, lets the streamlet start its
queries, and runs them until SIGTERM (graceful) or a query fails.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from harness.evidence.layout import RunLayout
from harness.spark.session import spark_session
from pipelines.kinds import add_import_paths, load_kind
from pipelines.context import StreamletContext
from pipelines.listener import JsonLinesListener
from pipelines.runtime import run_until_stopped
from pipelines.settings import DriverSettings


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m pipelines.driver SETTINGS.json", file=sys.stderr)
        return 2
    settings = DriverSettings.load(Path(argv[0]))
    layout = RunLayout(Path(settings.run_dir))
    scratch = layout.spark_local(settings.name)
    shutil.rmtree(scratch, ignore_errors=True)  # what a killed predecessor left: one driver per streamlet runs at a time
    scratch.mkdir(parents=True)
    spark = spark_session(f"streamlet-{settings.name}", master=settings.master, conf={"spark.local.dir": str(scratch)})
    spark.streams.addListener(JsonLinesListener(layout.progress(settings.name), settings.name))
    add_import_paths(settings.import_paths)
    streamlet = load_kind(settings.kind)()
    queries = streamlet.build(StreamletContext(spark, settings))
    print(f"streamlet {settings.name} ({settings.kind}) started {len(queries)} queries", flush=True)
    return run_until_stopped(spark, queries)


if __name__ == "__main__":
    sys.exit(main())
