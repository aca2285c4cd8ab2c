"""The reconciliation's SQL on Spark (`harness check --engine spark --master URL`): each table a Python data source
whose partitions are the run directory's segments, read by the executors where they run (the run directory on
storage they share: the same path on every machine), and the results brought back to this process as Arrow."""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from harness.checker.summary.identities import part_batches, schema_of, source_batches
from harness.checker.summary.sources import Source
from harness.checker.summary.sql import Plan, statements
from harness.errors import HarnessError
from harness.jars import java_executable
from harness.paths import SOURCE_ROOT
from harness.process.ports import accepts

FORMAT = "harness_evidence"


def ddl(source: Source) -> str:
    """The source's schema (identities.py) in Spark's words."""
    return ", ".join(
        f"{f.name} {'string' if pa.types.is_string(f.type) else 'bigint' if f.type == pa.int64() else 'int'}"
        for f in schema_of(source)
    )


class EvidenceSource(DataSource):
    """A table of identities read from its Source (option `source`: its folders, or its store and query)."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return ddl(self._source())

    def reader(self, schema):
        return EvidenceReader(self._source())

    def _source(self) -> Source:
        return Source(**json.loads(self.options["source"]))


class EvidenceReader(DataSourceReader):
    def __init__(self, source: Source):
        self.source = source

    def partitions(self):
        return [InputPartition(part) for part in self.source.parts()]

    def read(self, partition):
        yield from part_batches(self.source, *partition.value)


def _described(source: Source) -> str:
    described = asdict(source)
    del described["rows"]
    described["folders"] = list(source.folders)
    return json.dumps(described)


def _answering(master: str) -> None:
    """A standalone master that does not answer is named now (Spark would retry for a minute, then say only that
    its context stopped)."""
    if not master.startswith("spark://"):
        return
    for place in master[len("spark://") :].split(","):
        host, _, port = place.rpartition(":")
        if port.isdigit() and accepts(int(port), host, timeout=10):
            return
    raise HarnessError(f"Spark master {master} does not answer: is the cluster up, and the URL its master's?")


# The check's own Spark application: on loopback, no UI, Python workers of this interpreter. Not the streamlets'
# sessions (harness/spark/session.py: the Kafka connector, class-data sharing), which the checker does not import.
CONF = {
    "spark.app.name": "harness-check",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.memory": "1g",
    "spark.executor.memory": "1g",
    "spark.pyspark.python": sys.executable,
    "spark.executorEnv.PYTHONPATH": str(SOURCE_ROOT),  # where harness/ and contract/ are
}


def _session(master: str, scratch: str):
    from pyspark.sql import SparkSession

    java_executable()  # one line if there is no Java 17, rather than Py4J's error
    builder = SparkSession.builder.master(master)
    for key, value in {**CONF, "spark.sql.warehouse.dir": str(Path(scratch) / "warehouse")}.items():
        builder = builder.config(key, value)
    # the Python workers the JVM starts (the data source's planning on the driver too): this interpreter
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("HARNESS_SPARK_LOG_LEVEL", "WARN"))
    return spark


# A sort's partition must fit a task's share of an executor's memory: with 8 partitions the joins of 10M records
# (0.5 GB of segments) ran out of a 1g local executor (UNABLE_TO_ACQUIRE_MEMORY), with 64 they did not; more
# partitions than a small run needs cost it a task each per statement (1M records: 36 s with 8, 42 s with 64).
PARTITION_BYTES = 4 << 20  # of segments per shuffle partition
PARTITIONS = (8, 2000)  # the fewest, the most


def shuffle_partitions(views: dict[str, Source]) -> int:
    """The shuffle partitions for the evidence `views` read: one per PARTITION_BYTES of its segments."""
    size = sum(Path(path).stat().st_size for v in views.values() if v.folders for _, _, path in v.parts())
    return min(PARTITIONS[1], max(PARTITIONS[0], size // PARTITION_BYTES))


def run_spark(views: dict[str, Source], plan: Plan, master: str) -> dict[str, pa.Table]:
    """The plan's statements on a session of `master`; a session already active in this process (a check called
    from a Spark application) is used as it is, and left running."""
    from pyspark import StorageLevel
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is None:
        _answering(master)
    plan_statements = statements(plan)
    with tempfile.TemporaryDirectory(prefix="harness-spark-check-") as scratch:
        spark = active or _session(master, scratch)
        try:
            spark.conf.set("spark.sql.shuffle.partitions", str(shuffle_partitions(views)))
            spark.dataSource.register(EvidenceSource)
            for name, source in views.items():
                if source.rows is not None:  # rows the checker has: sent along with the plan
                    table = pa.Table.from_batches(list(source_batches(source)), schema_of(source))
                    frame = spark.createDataFrame(table.to_pandas(), schema=ddl(source))
                else:
                    frame = spark.read.format(FORMAT).option("source", _described(source)).load()
                    if sum(len(re.findall(rf"\bFROM {name}\b", st.sql)) for st in plan_statements) > 1:
                        frame = frame.persist(StorageLevel.MEMORY_AND_DISK)  # read again: from Spark's own storage
                frame.createOrReplaceTempView(name)
            results = {}
            for statement in plan_statements:
                frame = spark.sql(statement.sql)
                if statement.keep:
                    frame.persist(StorageLevel.MEMORY_AND_DISK).createOrReplaceTempView(statement.name)
                else:
                    results[statement.name] = frame.toArrow()
            return results
        finally:
            if active is None:
                spark.stop()
