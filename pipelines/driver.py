"""The entry point of every streamlet driver process.

    python -m pipelines.driver SETTINGS.json [SESSION.json]

Loads the settings the harness wrote, starts a SparkSession with the
configuration in them (the Kafka connector among it), attaches the progress
listener, lets the streamlet start its queries, and runs them until SIGTERM
(graceful) or a query fails. Given SESSION.json, it starts its session from
that first and waits for SETTINGS.json, which the harness writes once the
brokers, topics and outputs are ready: the session, most of a driver's start,
is made while the brokers start.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

from pipelines.context import StreamletContext
from pipelines.kinds import add_import_paths, load_kind
from pipelines.listener import JsonLinesListener
from pipelines.runtime import run_until_stopped
from pipelines.settings import DriverSession, DriverSettings


def session(given: DriverSession):
    from pyspark.sql import SparkSession

    # what a killed predecessor left: one driver per streamlet runs at a time
    shutil.rmtree(given.spark_local, ignore_errors=True)
    Path(given.spark_local).mkdir(parents=True)
    builder = SparkSession.builder.appName(given.app_name or f"streamlet-{given.name}").master(given.master)
    conf = {**given.spark_conf, "spark.local.dir": given.spark_local}
    # spark-submit makes a directory under java.io.tmpdir that only a graceful exit removes: a killed driver's would
    # stay in /tmp. In the scratch folder, the next start of this streamlet clears it.
    conf["spark.driver.extraJavaOptions"] = " ".join(
        [conf.get("spark.driver.extraJavaOptions", ""), f'"-Djava.io.tmpdir={given.spark_local}"']
    ).strip()
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(given.log_level)
    return spark


def settings_when_written(path: Path, parent: int) -> DriverSettings | None:
    """The settings once the harness has written them; None if the harness that started this driver is gone."""
    while not path.exists():
        if os.getppid() != parent:
            return None
        time.sleep(0.02)
    return DriverSettings.load(path)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) not in (1, 2):
        print("usage: python -m pipelines.driver SETTINGS.json [SESSION.json]", file=sys.stderr)
        return 2
    if len(argv) == 2:
        parent, given = os.getppid(), DriverSession.load(Path(argv[1]))
        spark = session(given)
        settings = settings_when_written(Path(argv[0]), parent)
        if settings is None:
            print("the harness that started this driver is gone: nothing to run", file=sys.stderr)
            return 1
        if settings.session() != given:
            print(f"{argv[0]}: its session is not the one started ({argv[1]})", file=sys.stderr)
            return 2
    else:
        settings = DriverSettings.load(Path(argv[0]))
        spark = session(settings.session())
    spark.streams.addListener(JsonLinesListener(Path(settings.paths.progress), settings.name, spark.version))
    add_import_paths(settings.import_paths)
    streamlet = load_kind(settings.kind)()
    queries = streamlet.build(StreamletContext(spark, settings))
    print(f"streamlet {settings.name} ({settings.kind}) started {len(queries)} queries", flush=True)
    return run_until_stopped(spark, queries)


if __name__ == "__main__":
    sys.exit(main())
