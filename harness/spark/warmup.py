"""The CDS training driver: the built-in streamlets' own code, run once, so the classes a driver loads get archived.

    python -m harness.spark.warmup BOOTSTRAP TOPIC WORKDIR JAVA_OPTIONS

Run by harness.cds_training with -XX:ArchiveClassesAtExit in the driver's JVM
flags. In one SparkSession set up as a driver's (the connector, the progress
listener), each built-in streamlet is built by its own build() and run with
availableNow, in pipeline order, each reading what the one before wrote:
ingress, processor, windowed count, then the egress in every mode and the
window egress. A restarted driver then finds its decoding, stamping, Kafka
writes, Arrow collection and store writes in the archive instead of its jars:
before this training covered them, a driver loaded about 6,000 classes from
jars on its way to steady state.
"""

from __future__ import annotations

import sys
from pathlib import Path

from harness.cluster import KafkaAdmin
from harness.evidence.layout import RunLayout
from harness.spark.paths import driver_paths
from harness.spark.session import spark_session
from pipelines.builtin.egress import MODES
from pipelines.context import StreamletContext
from pipelines.kinds import load_kind, resolve_settings
from pipelines.listener import JsonLinesListener
from pipelines.settings import DriverSettings, SourceOptions

# (streamlet, kind, settings, its inlet's topic suffix or None for the source, its outlet's topic suffix)
STAGES = (
    ("ingress", "ingress", {}, None, "ingested"),
    ("processor", "processor", {}, "ingested", "processed"),
    ("windowed", "windowed-count", {}, "processed", "counts"),
    *((f"egress-{mode}", "egress", {"mode": mode}, "processed", None) for mode in MODES),
    ("window-egress", "window-egress", {}, "counts", None),
)


def stage_settings(bootstrap: str, topic: str, layout: RunLayout, stage: tuple) -> DriverSettings:
    name, kind, given, inlet_topic, outlet_topic = stage
    cls = load_kind(kind)
    settings, _, _ = resolve_settings(cls, given, kind)
    return DriverSettings(
        name=name,
        kind=kind,
        settings=settings,
        bootstrap_servers=bootstrap,
        paths=driver_paths(layout, name),
        spark_conf={},
        inputs={cls.shape.inlets[0].name: f"{topic}-{inlet_topic}"} if inlet_topic else {},
        outputs={cls.shape.outlets[0].name: f"{topic}-{outlet_topic}"} if outlet_topic else {},
        source_topic=topic,
        source=SourceOptions(trigger="availableNow"),
    )


def run(bootstrap: str, topic: str, workdir: Path, java_options: str) -> None:
    """`topic` holds the source records; the topics the stages write are created here."""
    with KafkaAdmin(bootstrap) as admin:
        for *_, outlet_topic in STAGES:
            if outlet_topic:
                admin.create_topic(f"{topic}-{outlet_topic}", partitions=2)
    layout = RunLayout(workdir)
    spark = spark_session("cds-warmup", conf={"spark.driver.extraJavaOptions": java_options})
    spark.streams.addListener(JsonLinesListener(layout.progress("warmup"), "warmup", spark.version))
    for stage in STAGES:
        settings = stage_settings(bootstrap, topic, layout, stage)
        for query in load_kind(settings.kind)().build(StreamletContext(spark, settings)):
            query.awaitTermination(300)
            if query.exception() is not None:
                raise RuntimeError(f"training stage {settings.name}: {query.exception()}")
    spark.stop()


if __name__ == "__main__":
    bootstrap_arg, topic_arg, workdir_arg, options_arg = sys.argv[1:5]
    run(bootstrap_arg, topic_arg, Path(workdir_arg), options_arg)
