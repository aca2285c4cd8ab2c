"""What a streamlet sees of the world: its inlets as DataFrames, its outlets as sinks.

In the spirit of Cloudflow's SparkStreamletLogic context: read an inlet, write
an outlet, and one checkpoint directory per query (checkpoint_dir(name)).
Writes to Kafka go through foreachBatch so that every record carries the id
of the batch that wrote it: a replayed batch is visible downstream.
"""

from __future__ import annotations

import json
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType

from contract.egress import AUDIT, MAIN_QUERY
from pipelines.audit import Deliveries
from pipelines.crashpoint import CrashPoint
from pipelines.kafka_security import password_from_env
from pipelines.model import SOURCE_RECORD, SPARK_TYPES, Inlet, Outlet, Schema
from pipelines.settings import DriverSettings, SettingsView
from pipelines.stores import Store, now_ms

# Larger fetches and producer batches than the Kafka clients' defaults: with them a driver reads about 1.6x
# and writes about 1.5x as many records a second here (bench/pipeline_throughput.py has the whole figure).
# A micro-batch's writes are flushed when its task ends, so linger.ms adds no latency beyond the batch.
SOURCE_TUNING = {
    "kafka.max.partition.fetch.bytes": str(16 << 20),
    "kafka.fetch.max.bytes": str(64 << 20),
    "kafka.max.poll.records": "20000",
}
SINK_TUNING = {"kafka.batch.size": str(1 << 20), "kafka.linger.ms": "20"}
DROPPED = "_dropped_by_design"  # the column ctx.drop_where marks records with (the reason), until ctx.write


def batch_map_json(df: DataFrame):
    """The record's `batches` map as JSON text, as the audit keeps it: `df`'s column as it is where it is text
    already (read with stamps_as_text), encoded where it is a map."""
    text = F.col("batches") if isinstance(df.schema["batches"].dataType, StringType) else F.to_json(F.col("batches"))
    return F.coalesce(text, F.lit("{}"))


def to_arrow(df: DataFrame):
    """`df` collected as a pyarrow Table: DataFrame.toArrow() from Spark 4.0 on; on Spark 3.5 (a scenario's
    cluster.spark.version) the internal collection it wraps."""
    if hasattr(df, "toArrow"):
        return df.toArrow()
    import pyarrow as pa

    batches = df._collect_as_arrow()
    return (
        pa.Table.from_batches(batches) if batches else pa.table({name: pa.array([], pa.null()) for name in df.columns})
    )


def batch_columns(batch: DataFrame, *columns) -> list[list]:
    """The batch's `columns` as Python lists, converted in Spark and moved through Arrow: no Row objects, no
    per-row pickling (collect() cost more than the writes). zip() them into the rows a store takes: building
    rows from columns costs a third of converting rows and unpacking them again (egress, 50,000 rows)."""
    return column_lists(to_arrow(batch.select(*columns)))


def column_lists(table) -> list[list]:
    """An Arrow table's columns as Python lists."""
    return [column.to_pylist() for column in table.columns]


def _decoded_once(raw: DataFrame, decode, where: list[str]) -> DataFrame:
    """The decoded record's fields as columns, followed by `where`, each record decoded once.

    Selecting the decoded struct's fields lets the optimizer push a later filter on them below the projection,
    a copy of the decoder in each predicate: the ingress's four-way validity check parsed every record five
    times (18.3 CPU us a record instead of 7.5 here). A generator is a barrier filters on its output do not
    cross; inline(array(struct)) yields the struct's fields, or nulls where the struct is null, one row a record.
    """
    return raw.select(F.inline(F.array(decode)), *where)


class StreamletContext(SettingsView):
    def __init__(self, spark: SparkSession, settings: DriverSettings):
        super().__init__(settings)
        self.spark = spark
        paths = settings.paths
        self.crash_point = CrashPoint(paths.crash_arm, paths.crash_held, paths.crash_offered)
        self._deliveries: Deliveries | None = None

    # -- reading -------------------------------------------------------------

    def _kafka_stream(self, topic: str) -> DataFrame:
        src = self.settings.source
        reader = (
            self.spark.readStream.format("kafka")
            .options(**self.kafka_options())
            .option("subscribe", topic)
            .option("failOnDataLoss", str(src.fail_on_data_loss).lower())
            .options(**SOURCE_TUNING)
        )
        if src.starting_timestamp_ms is not None:
            reader = reader.option("startingTimestamp", str(src.starting_timestamp_ms))
        else:
            reader = reader.option("startingOffsets", src.starting_offsets)
        if src.group_id:
            reader = reader.option("kafka.group.id", src.group_id)
        elif self.settings.group_id_prefix:
            reader = reader.option("groupIdPrefix", self.settings.group_id_prefix)
        if src.include_headers:
            reader = reader.option("includeHeaders", "true")
        if src.isolation_level:
            reader = reader.option("kafka.isolation.level", src.isolation_level)
        if src.max_offsets_per_trigger:
            reader = reader.option("maxOffsetsPerTrigger", str(src.max_offsets_per_trigger))
        if src.min_offsets_per_trigger:
            reader = reader.option("minOffsetsPerTrigger", str(src.min_offsets_per_trigger))
        if src.max_trigger_delay:
            reader = reader.option("maxTriggerDelay", src.max_trigger_delay)
        return reader.load()

    def _decoded(
        self, topic: str, schema: Schema, writer: Schema | None = None, stamps_as_text: bool = False
    ) -> DataFrame:
        """A topic's records decoded in the topic's codec (written with `writer`, `schema` by default) and read as
        `schema` (a field the writer lacks is null), keeping where each came from (topic, partition, offset), and
        its headers when the source options include them; with `stamps_as_text`, `batches` as JSON text."""
        raw = self._kafka_stream(topic)
        where = ["topic", "partition", "offset"] + (["headers"] if self.settings.source.include_headers else [])
        if self.settings.codecs.get(topic, "json") == "avro":
            from pyspark.sql.avro.functions import from_avro

            writer = writer or schema
            decoded = _decoded_once(raw, from_avro(F.col("value"), writer.avro(), {"mode": "PERMISSIVE"}), where)
            known = {f.name for f in writer.fields}

            def column(f):
                value = F.col(f.name) if f.name in known else F.lit(None).cast(SPARK_TYPES[f.type])
                return (F.to_json(value) if stamps_as_text and f.type == "batch_map" else value).alias(f.name)

            return decoded.select(*map(column, schema.fields), *where)
        return _decoded_once(raw, F.from_json(F.col("value").cast("string"), schema.ddl(stamps_as_text)), where)

    def read_source(self, schema: Schema) -> DataFrame:
        """The workload's source topic, decoded (fields are null where a record did not parse)."""
        return self._decoded(self.settings.source_topic, schema, SOURCE_RECORD)

    def read(self, inlet: Inlet, stamps_as_text: bool = False) -> DataFrame:
        """An inlet's records, decoded with the inlet's schema in its topic's codec. An egress, which only stores
        the batch stamps, reads them `stamps_as_text` (`batches` as the JSON text the audit keeps): with JSON on
        the topic that is the record's own text, no map built and encoded again per record (about 1 CPU
        microsecond a record here)."""
        return self._decoded(self.settings.inputs[inlet.name], inlet.schema, stamps_as_text=stamps_as_text)

    # -- writing -------------------------------------------------------------

    def audit(self, batch: DataFrame, batch_id: int, query: str = MAIN_QUERY) -> None:
        """An egress of your own: record what this batch received, before writing it to your store.

        Every record of the batch, with the batch id and where it came from, goes to the audit table of
        egress/<streamlet>.sqlite in the run directory, in a transaction of its own (or, for a run recording its
        evidence in columnar form, to egress/<streamlet>.audit/): the checker's deliveries.
        A replayed batch is audited again, which is how re-deliveries are seen.
        """
        table = to_arrow(
            batch.select(
                "key", "seq", F.unix_millis("event_time"), batch_map_json(batch), "topic", "partition", "offset"
            )
        )
        if self._deliveries is None:

            def store() -> Store:
                audit_store = Store(sqlite_path=Path(self.settings.paths.egress_db))
                audit_store.create_tables(upsert_key=False, only=(AUDIT,))
                return audit_store

            self._deliveries = Deliveries(self.settings.paths.egress_audit, store)
        self._deliveries.record(query, batch_id, *table.columns)

    def checkpoint_dir(self, query: str) -> str:
        """One checkpoint directory per query, under the run directory."""
        path = Path(self.settings.paths.checkpoints) / query
        path.parent.mkdir(parents=True, exist_ok=True)
        return str(path)

    def _trigger(self, writer):
        src = self.settings.source
        if src.trigger == "availableNow":
            return writer.trigger(availableNow=True)
        if src.trigger == "processingTime":
            return writer.trigger(processingTime=src.trigger_interval)
        return writer

    def drop_where(self, df: DataFrame, condition, reason: str) -> DataFrame:
        """Declare that records matching `condition` are dropped by design, for `reason`.

        They stay in `df`, marked; `write` records them in the run directory (dropped/<streamlet>.jsonl) and
        writes only the others, so the checker counts them as dropped by the pipeline, not lost. A record
        marked by an earlier call keeps that call's reason.
        """
        marked = F.when(condition, F.lit(reason))
        if DROPPED in df.columns:
            marked = F.coalesce(F.col(DROPPED), marked)
        return df.withColumn(DROPPED, marked)

    def _record_dropped(self, batch: DataFrame, batch_id: int) -> DataFrame:
        """The batch without the records declared dropped; those are appended to the evidence first."""
        if DROPPED not in batch.columns:
            return batch
        batch = batch.persist()
        table = to_arrow(batch.where(F.col(DROPPED).isNotNull()).select("key", "seq", DROPPED))
        if table.num_rows:
            now = now_ms()
            path = Path(self.settings.paths.dropped)
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "a") as out:
                out.writelines(
                    json.dumps({"key": key, "seq": seq, "reason": reason, "batch": batch_id, "ts_ms": now}) + "\n"
                    for key, seq, reason in zip(*(c.to_pylist() for c in table.columns))
                )
        return batch.where(F.col(DROPPED).isNull()).drop(DROPPED)

    def stamp(self, df: DataFrame, batch_id: int) -> DataFrame:
        """Add this streamlet's batch id to the record's `batches` map."""
        mine = F.create_map(F.lit(self.name), F.lit(batch_id).cast("bigint"))
        if "batches" in df.columns:
            mine = F.map_concat(F.coalesce(F.col("batches"), F.create_map().cast("map<string,bigint>")), mine)
        return df.withColumn("batches", mine)

    def write(self, outlet: Outlet, df: DataFrame, query: str = "out", output_mode: str = "append"):
        """Start a query writing `df` to the outlet's topic, keyed by the outlet's partition key."""

        def write_batch(batch: DataFrame, batch_id: int) -> None:
            kept = self._record_dropped(batch, batch_id)
            stamped = self.stamp(kept, batch_id) if self.settings.evidence else kept
            self.encode(outlet, stamped).write.format("kafka").options(**self._kafka_sink_options(outlet)).save()
            if kept is not batch:
                batch.unpersist()

        return self.foreach_batch(df, write_batch, query, output_mode)

    def write_kafka_sink(self, outlet: Outlet, df: DataFrame, query: str = "out", output_mode: str = "append"):
        """Start Spark's own Kafka sink (writeStream.format("kafka")) writing `df` to the outlet's topic.

        Spark documents this sink as at-least-once: a batch that ran again writes its records again. No batch
        stamps and no crash point (there is no hook between the write and the commit); the harness's
        `at: in-flight` kill catches a batch between its offsets/N and commits/N instead."""
        return self.write_stream(
            self.encode(outlet, df), "kafka", query, output_mode, **self._kafka_sink_options(outlet)
        )

    def encode(self, outlet: Outlet, df: DataFrame) -> DataFrame:
        """`df` as Kafka records of the outlet: key (the partition key as text) and value (its schema's fields,
        null where `df` lacks one, in its topic's codec), and headers where `df` has a `headers` column (Spark's
        Kafka writer writes that column as the records' headers)."""
        key = F.col(outlet.partition_key).cast("string").alias("key")
        headers = [F.col("headers")] if "headers" in df.columns else []
        if self.settings.codecs.get(self.settings.outputs[outlet.name], "json") == "avro":
            from pyspark.sql.avro.functions import to_avro

            fields = [
                (F.col(f.name) if f.name in df.columns else F.lit(None)).cast(SPARK_TYPES[f.type]).alias(f.name)
                for f in outlet.schema.fields
            ]
            return df.select(key, *headers, to_avro(F.struct(*fields), outlet.schema.avro()).alias("value"))
        present = [F.col(f.name) for f in outlet.schema.fields if f.name in df.columns]
        return df.select(key, *headers, F.to_json(F.struct(*present)).alias("value"))

    def _kafka_sink_options(self, outlet: Outlet) -> dict[str, str]:
        return {**self.kafka_options(), "topic": self.settings.outputs[outlet.name], **SINK_TUNING}

    def kafka_options(self) -> dict[str, str]:
        """Where the brokers are and how to speak to them, as Spark's Kafka source and sink take it (`kafka.*`): for
        a read or a write of your own to the run's cluster, secured or not. The password is read from this
        process's environment, where the harness put it; keep these options out of anything you print."""
        return {
            "kafka.bootstrap.servers": self.settings.bootstrap_servers,
            **self.settings.kafka_security.spark_options(password_from_env()),
        }

    def write_stream(self, df: DataFrame, format: str, query: str = "main", output_mode: str = "append", **options):
        """Start Spark's own sink for `df` (`format`: parquet, json, kafka, delta...) as users write it, with a
        checkpoint and the scenario's trigger. No batch stamps and no crash point: what such a sink does under
        a kill is exactly what the harness is asked to show (a driver with no crash point is killed after-write
        when its output shows a batch planned and not committed, as for in-flight)."""
        writer = (
            df.writeStream.queryName(f"{self.name}.{query}")
            .format(format)
            .outputMode(output_mode)
            .option("checkpointLocation", self.checkpoint_dir(query))
            .options(**options)
        )
        return self._trigger(writer).start()

    def foreach_batch(self, df: DataFrame, function, query: str, output_mode: str = "append"):
        """Start a query calling `function(batch_df, batch_id)` per micro-batch, checkpointed.

        After each write the batch passes the crash point (a no-op unless the harness armed it).
        """

        def write_then_crash_point(batch: DataFrame, batch_id: int) -> None:
            function(batch, batch_id)
            self.crash_point.reached(query, batch_id)

        writer = (
            df.writeStream.queryName(f"{self.name}.{query}")
            .outputMode(output_mode)
            .option("checkpointLocation", self.checkpoint_dir(query))
            .foreachBatch(write_then_crash_point)
        )
        self.crash_point.offer()
        return self._trigger(writer).start()
