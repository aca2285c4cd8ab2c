"""The entry point of every streamlet driver process.

    python -m pipelines.driver SETTINGS.json

Loads the settings the harness wrote, starts a SparkSession with the
configuration in them (the Kafka connector among it), attaches the progress
listener, lets the streamlet start its queries, and runs them until SIGTERM
(graceful) or a query fails.
"""

from __future__ import annotations

import sys
from pathlib import Path

from contract import scratch as scratch_folder
from pipelines.context import StreamletContext
from pipelines.kinds import add_import_paths, load_kind
from pipelines.listener import JsonLinesListener
from pipelines.runtime import run_until_stopped
from pipelines.settings import DriverSettings


def session(settings: DriverSettings):
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(settings.app_name or f"streamlet-{settings.name}").master(settings.master)
    conf = {**settings.spark_conf, "spark.local.dir": settings.paths.spark_local}
    # spark-submit makes a directory under java.io.tmpdir that only a graceful exit removes: a killed driver's would
    # stay in /tmp. In the scratch folder, the next start of this streamlet clears it.
    conf["spark.driver.extraJavaOptions"] = " ".join(
        [conf.get("spark.driver.extraJavaOptions", ""), f'"-Djava.io.tmpdir={settings.paths.spark_local}"']
    ).strip()
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(settings.log_level)
    return spark


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m pipelines.driver SETTINGS.json", file=sys.stderr)
        return 2
    settings = DriverSettings.load(Path(argv[0]))
    scratch = Path(settings.paths.spark_local)
    scratch_folder.clear(scratch)  # what a killed predecessor left, not what a zombie beside this one uses
    spark = session(settings)
    spark.streams.addListener(JsonLinesListener(Path(settings.paths.progress), settings.name, spark.version))
    add_import_paths(settings.import_paths)
    streamlet = load_kind(settings.kind)()
    queries = streamlet.build(StreamletContext(spark, settings))
    print(f"streamlet {settings.name} ({settings.kind}) started {len(queries)} queries", flush=True)
    return run_until_stopped(spark, queries)


if __name__ == "__main__":
    sys.exit(main())
